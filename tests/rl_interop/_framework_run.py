"""Running a script in an RL framework's virtualenv (.cache/rl-interop/<name>) and judging what it played."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from tests.helpers import PYTHON

HERE = Path(__file__).parent
CHECKOUT = HERE.parent.parent
VENVS = CHECKOUT / ".cache" / "rl-interop"


def framework_python(name: str) -> Path:
    python = VENVS / name / "bin" / "python"
    assert python.exists(), (
        f"{python} is missing: `make rl-interop` installs tests/rl_interop/requirements/{name}.txt"
    )
    return python


def run_in_framework(name: str, script: str, folder: Path) -> dict[str, Any]:
    """Run tests/rl_interop/<script> with the framework's Python (the checkout on its path, for the test
    helpers' scripted models); its last output line, as JSON."""
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(folder),
        "LANG": "C.UTF-8",
        "PYTHONPATH": str(CHECKOUT),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "XDG_DATA_HOME": str(folder),
        "TRL_EXPERIMENTAL_SILENCE": "1",
    }
    done = subprocess.run(
        [str(framework_python(name)), str(HERE / script), str(folder)],
        capture_output=True,
        text=True,
        env=env,
        cwd=folder,
        timeout=600,
    )
    assert done.returncode == 0, f"{script} failed:\n{done.stdout}\n{done.stderr}"
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


def judged_score(folder: Path, episode_id: str) -> float:
    """The score `occusim judge` gives the stored episode (the triage task's rubric has state items only)."""
    done = subprocess.run(
        [
            PYTHON,
            "-m",
            "occusim",
            "judge",
            episode_id,
            "--db",
            str(folder / "episodes.db"),
            "--source",
            str(folder / "triage-desk.yaml"),
            "--skip-llm",
            "--json",
        ],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
    )
    score: float = json.loads(done.stdout)["score"]
    return score
