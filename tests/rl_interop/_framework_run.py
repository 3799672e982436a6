"""Running a script in an RL framework's virtualenv (.cache/rl-interop/<name>) and judging what it played."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from tests.helpers import judge_by_cli

HERE = Path(__file__).parent
CHECKOUT = HERE.parent.parent
VENVS = CHECKOUT / ".cache" / "rl-interop"


def framework_python(name: str) -> Path:
    python = VENVS / name / "bin" / "python"
    assert python.exists(), (
        f"{python} is missing: `make rl-interop` installs tests/rl_interop/requirements/{name}.txt"
    )
    return python


def run_script(python: Path, script: str, arguments: list[str], folder: Path, *, env: dict[str, str],
               timeout: float) -> dict[str, Any]:
    """Run tests/rl_interop/<script> with `python` in `folder`, its environment `env` and no more than PATH,
    HOME and LANG of this one (nothing of occusim's environment leaks into the framework's); its last output
    line, as JSON."""
    done = subprocess.run(
        [str(python), str(HERE / script), *arguments],
        capture_output=True,
        text=True,
        env={"PATH": os.environ.get("PATH", ""), "HOME": str(folder), "LANG": "C.UTF-8", **env},
        cwd=folder,
        timeout=timeout,
    )
    assert done.returncode == 0, f"{script} failed:\n{done.stdout}\n{done.stderr}"
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


def run_in_framework(name: str, script: str, folder: Path) -> dict[str, Any]:
    """Run tests/rl_interop/<script> with the framework's Python (the checkout on its path, for the test
    helpers' scripted models) on `folder`; its last output line, as JSON."""
    env = {
        "PYTHONPATH": str(CHECKOUT),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "XDG_DATA_HOME": str(folder),
        "TRL_EXPERIMENTAL_SILENCE": "1",
    }
    return run_script(framework_python(name), script, [str(folder)], folder, env=env, timeout=600)


def judged_score(folder: Path, episode_id: str) -> float:
    """The score `occusim judge` gives the stored episode (the triage task's rubric has state items only)."""
    score: float = judge_by_cli(episode_id, folder / "episodes.db", folder / "triage-desk.yaml", "--skip-llm")["score"]
    return score
