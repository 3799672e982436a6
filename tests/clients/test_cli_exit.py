"""`occusim run` as a process ends without the interpreter's teardown (`exit_at_once`): its exit status, its
printed summary, its rows and its stored episodes are all there, and `atexit` handlers still run."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

from occusim.analysis import RunDir
from occusim.server import Store
from tests.helpers import TASK_A, TASK_B, ScriptedProvider, replay_responders


def policy(task_id: str, seed: int | None) -> str:
    return "replay"


def occusim(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "occusim", *args], env=env, capture_output=True, text=True,
                          timeout=180)


def test_a_run_process_reports_writes_and_exits_with_its_status(tmp_path: Path):
    out = tmp_path / "out"
    fake = ScriptedProvider(replay_responders(policy), latency=0.01)
    with fake.running():
        env = {**os.environ, **fake.environment(), "LITELLM_LOCAL_MODEL_COST_MAP": "True", "OCCUSIM_NO_CACHE": "1"}
        ran = occusim("run", "--agent-model", "openai/fake-agent", "--world-model", "openai/fake-world",
                      "--judge-model", "openai/fake-judge", "--tasks", f"{TASK_A},{TASK_B}", "--faults", "E0",
                      "--trials", "2", "--no-progress", "--out", str(out), env=env)

    assert ran.returncode == 0, ran.stderr
    assert "occusim run: 4 episode(s) run, 0 already done" in ran.stdout
    assert f"results: {out}" in ran.stdout  # the last line printed still reaches the pipe
    rows = RunDir(out).read_rows()
    assert len(rows) == 4 and {row.status for row in rows} == {"ok"}

    async def stored() -> int:
        async with Store(RunDir(out).default_db) as store:
            return await store.count_episodes()

    assert asyncio.run(stored()) == 4


def test_a_refused_run_exits_with_status_2_and_says_why(tmp_path: Path):
    ran = occusim("run", "--workers", "0", "--out", str(tmp_path / "out"), "--agent-model", "scripted/x",
                  env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"})

    assert ran.returncode == 2
    assert "occusim run: --workers 0: use 1 or more" in ran.stderr and "Traceback" not in ran.stderr


def test_atexit_handlers_run_before_the_process_ends(tmp_path: Path):
    marker = tmp_path / "atexit-ran"
    script = (
        "import atexit, pathlib, sys\n"
        "from occusim.clients.cli import exit_at_once\n"
        f"atexit.register(pathlib.Path({str(marker)!r}).write_text, 'yes')\n"
        "print('buffered line', end='')\n"
        "exit_at_once(3)\n"
    )
    ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)

    assert ran.returncode == 3 and ran.stdout == "buffered line"
    assert marker.read_text() == "yes"


def test_the_collector_is_back_on_after_a_run_in_this_process(tmp_path: Path, capsys):
    import gc

    from occusim.clients.cli import main

    assert main(["run", "--workers", "0", "--agent-model", "scripted/x", "--out", str(tmp_path / "out")]) == 2
    assert gc.isenabled()
    assert "--workers 0" in capsys.readouterr().err
