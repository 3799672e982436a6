"""`occusim serve --openenv` as a process on the triage source, for the OpenEnv tests of both suites."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

from ._served import PYTHON, free_port, server_env, wait_healthy, write_triage_source


@contextlib.contextmanager
def openenv_served(tmp_path: Path, judge_model: str = "scripted/deterministic-only", *extra: str) -> Iterator[str]:
    """The server with world model scripted/triage and the given judge (and `extra` arguments), its episodes in
    tmp_path/episodes.db; yields its base URL, and checks on the way out that it logged no traceback."""
    port = free_port()
    log = tmp_path / "serve.log"
    command = [
        PYTHON, "-m", "occusim", "serve", "--openenv", "--source", str(write_triage_source(tmp_path)),
        "--no-bundled", "--db", str(tmp_path / "episodes.db"), "--world-model", "scripted/triage",
        "--judge-model", judge_model, "--port", str(port), "--log-level", "warning", *extra,
    ]
    with log.open("w") as stderr:
        process = subprocess.Popen(command, env=server_env(tmp_path), stderr=stderr)
    base = f"http://127.0.0.1:{port}"
    try:
        asyncio.run(wait_healthy([base], [process], health="/health"))
        yield base
    finally:
        process.terminate()
        process.wait(timeout=30)
    assert "Traceback" not in log.read_text(), log.read_text()
