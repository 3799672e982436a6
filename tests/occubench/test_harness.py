"""Reading OccuBench's harness from a checkout: parsed, never run; odd or hostile sources are refused."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from occusim.occubench import HarnessError, load_harness

REPO = Path(__file__).resolve().parents[2]
HARNESS = (REPO / ".." / "shared" / "occubench" / "occubench").resolve()

pytestmark = pytest.mark.skipif(not HARNESS.is_dir(), reason=f"no OccuBench harness at {HARNESS}")


def _copy(tmp_path: Path) -> Path:
    target = tmp_path / "occubench"
    shutil.copytree(HARNESS, target)
    return target


def test_found_beside_or_inside_the_source_with_file_hashes(tmp_path: Path) -> None:
    _copy(tmp_path)
    beside = load_harness(f"occubench:{tmp_path / 'data'}")
    inside = load_harness(tmp_path)
    assert beside == inside
    assert beside.files["verifier.py"] == hashlib.sha256((HARNESS / "verifier.py").read_bytes()).hexdigest()
    assert set(beside.fault_rules) == {"E1", "E2", "E3"}
    assert beside.fault_prompt("E0", 2, 2) is None
    # Counts are substituted, so two settings give two different rule texts.
    assert beside.fault_prompt("E3", 2, 2) != beside.fault_prompt("E3", 3, 1)


def test_never_runs_the_harness(tmp_path: Path) -> None:
    harness = _copy(tmp_path)
    marker = tmp_path / "ran"
    for name in ("agent.py", "lwm.py", "verifier.py", "fault_injection.py", "evaluate.py"):
        path = harness / name
        path.write_text(f"open({str(marker)!r}, 'w').write('x')\n" + path.read_text(encoding="utf-8"),
                        encoding="utf-8")
    load_harness(tmp_path)
    assert not marker.exists()


@pytest.mark.parametrize(
    ("name", "old", "new", "message"),
    [
        ("verifier.py", "{trajectory}", "{trajectory.__class__}", "fields occusim cannot fill"),
        ("fault_injection.py", "{fault_count}", "{fault_count:>300000000}", r"formats its fields \({fault_count:>3"),
        ("verifier.py", "{trajectory}", "{trajectory!r:.5}", r"formats its fields \({trajectory!r:.5}\)"),
        ("agent.py", "EXECUTOR_SYSTEM_PROMPT =", "OTHER_PROMPT =", "system prompt"),
        ("lwm.py", "def simulate_tool_call(", "def simulate_call(", "lwm.py"),
        ("fault_injection.py", '"E2": FAULT_PROMPT_E2, ', "", "E1/E2/E3"),
        ("verifier.py", "def __init__(", "def __init__(:", "not valid Python"),
    ],
)
def test_a_harness_occusim_cannot_replicate_is_refused(tmp_path: Path, name: str, old: str, new: str,
                                                        message: str) -> None:
    path = _copy(tmp_path) / name
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    with pytest.raises(HarnessError, match=message):
        load_harness(tmp_path)
