"""`occusim judge EPISODE_ID --json` in a process of its own, as a user runs it on a stored episode."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from ._served import PYTHON


def judge_by_cli(episode_id: str, db: Path, source: Path, *options: str,
                 env: dict[str, str] | None = None) -> dict[str, Any]:
    """The verdict `occusim judge` prints for the episode stored in `db`, its task loaded from `source`
    (`options` such as `--skip-llm` or `--no-bundled`); `env` defaults to this process's own."""
    done = subprocess.run(
        [PYTHON, "-m", "occusim", "judge", episode_id, "--db", str(db), "--source", str(source), *options, "--json"],
        capture_output=True,
        text=True,
        env=env if env is not None else {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    verdict: dict[str, Any] = json.loads(done.stdout)
    return verdict
