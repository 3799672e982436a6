"""Tool descriptions say what a tool does: bench/policy_in_descriptions.py, run as a user runs it, finds no task
whose trap a visible description states, and still flags the descriptions labelled by hand as stating policy."""

from __future__ import annotations

import functools
import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "policy_in_descriptions.py"
LABELS = ROOT / "bench" / "policy_in_descriptions_labels.yaml"


@functools.cache
def _run(*args: str) -> str:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_no_task_has_its_trap_stated_in_a_tool_description():
    output = _run()
    found = re.search(r"tasks whose trap is stated in a description:\s+(\d+) of (\d+)", output)
    assert found, output
    assert int(found.group(1)) == 0, _run("--verbose")
    assert int(found.group(2)) >= 120


def test_the_descriptions_rewritten_first_are_flagged_in_their_earlier_wording():
    labelled = yaml.safe_load(LABELS.read_text())
    earlier = [case for case in labelled if case["source"].startswith("git")]
    assert {case["tool"] for case in earlier} == {
        "set_filter_mode",
        "set_chlorine_dose",
        "set_diversion_order",
    }
    output = _run()
    for case in earlier:
        assert f"{case['scenario']}/{case['tool']}" not in output  # flagged, so not listed among the misses
    agreement = re.search(
        r"against (\d+) hand-labelled descriptions: (\d+) flagged and labelled policy", output
    )
    assert agreement, output
    assert int(agreement.group(2)) >= len(earlier)
