"""The protocol seam: each name loads its implementation, and only the composition roots test a protocol's name."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from occusim.clients import PROTOCOLS, RunProtocol, load_protocol
from occusim.clients.cli import main
from occusim.occubench import HarnessError, OccubenchProtocol
from occusim.server import NATIVE_MODES
from tests.helpers import occubench_sample_path

REPO = Path(__file__).resolve().parents[2]
SAMPLE = occubench_sample_path()
# A branch on the protocol's name, or on a missing harness standing for it.
BRANCH = re.compile(r"\b(if|elif|while)\b.*(== \"occubench\"|!= \"occubench\"|== \"native\"|!= \"native\"|"
                    r"harness is (not )?None)")


def test_the_native_protocol_loads_from_no_source() -> None:
    protocol = load_protocol("native", [])
    assert isinstance(protocol, RunProtocol)
    assert protocol.name == "native"
    assert protocol.episode_mode(None) == "tracked" and protocol.episode_mode("history") == "history"
    assert protocol.serve_arguments("history") == ["--mode", "history"]
    assert protocol.provenance().harness_files == {}


def test_every_protocol_is_named_once() -> None:
    assert set(PROTOCOLS) == {"native", "occubench"}
    assert PROTOCOLS["occubench"] == f"{OccubenchProtocol.__module__.rpartition('.')[0]}:{OccubenchProtocol.__name__}"


def test_the_occubench_protocol_without_a_source_says_what_is_missing() -> None:
    with pytest.raises(HarnessError, match="--source occubench:PATH"):
        load_protocol("occubench", ["scenarios/"])


@pytest.mark.occubench_harness
def test_the_occubench_protocol_reads_the_harness_once() -> None:
    protocol = load_protocol("occubench", [f"occubench:{SAMPLE}"])
    assert isinstance(protocol, OccubenchProtocol)
    assert protocol.episode_mode("tracked") == "occubench" not in NATIVE_MODES
    assert protocol.serve_arguments("occubench") == ["--protocol", "occubench"]
    assert set(protocol.provenance().harness_files) >= {"agent.py", "lwm.py", "verifier.py"}


def test_no_product_module_outside_the_occubench_folder_branches_on_the_protocol() -> None:
    found = []
    packages = sorted(link.name for link in (REPO / "occusim").iterdir() if link.is_symlink())
    assert {"server", "clients", "occubench"} <= set(packages)
    for folder in (name for name in packages if name != "occubench"):
        for path in sorted((REPO / folder).rglob("*.py")):
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if BRANCH.search(line):
                    found.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert found == [], found


@pytest.mark.occubench_harness
def test_serve_refuses_a_native_mode_under_the_occubench_protocol(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["serve", "occubench/11", "--protocol", "occubench", "--source", f"occubench:{SAMPLE}", "--mode",
                 "tracked", "--no-bundled"])
    assert code == 2
    assert capsys.readouterr().err.strip() == ("occusim serve: --mode applies to the native protocol; --protocol "
                                               "occubench simulates in its own occubench mode")
