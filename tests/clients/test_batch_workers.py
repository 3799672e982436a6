"""`occusim run --workers N`: worker processes sharing one store (SQLite, PostgreSQL) and one results file,
against scripted models behind a real OpenAI-compatible endpoint; a killed worker and a killed driver."""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from occusim.analysis import ResultRow, RunConfig, RunDir, load_rows
from occusim.clients import run_batch
from occusim.clients._batch import BatchRunner
from occusim.clients.cli import main
from occusim.server import Store
from tests.helpers import (
    POSTGRES_URL,
    TASK_A,
    TASK_B,
    ScriptedProvider,
    replay_responders,
)

TASKS = f"{TASK_A},{TASK_B}"
# Fields that tell two runs of the same combination apart however they are run: ids and times.
VOLATILE: dict[str, Any] = {"duration_s": True, "finished_at": True, "verdict": {"created_at"}}


def policy(task_id: str, seed: int | None) -> str:
    return "careful" if task_id == TASK_A else "replay"


@pytest.fixture
def provider(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedProvider]:
    """The endpoint every process reaches the models at (worker processes inherit the variables)."""
    fake = ScriptedProvider(replay_responders(policy), latency=0.05)
    with fake.running():
        for name, value in fake.environment().items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("OCCUSIM_NO_CACHE", "1")
        yield fake


def config(**overrides: Any) -> RunConfig:
    values: dict[str, Any] = dict(
        agent_model="openai/fake-agent", world_model="openai/fake-world", judge_model="openai/fake-judge",
        tasks=TASKS, faults=["E0", "E2"], trials=2, seed=5, concurrency=4, cache=False,
    )
    values.update(overrides)
    return RunConfig(**values)


def comparable(rows: list[ResultRow]) -> dict[tuple[str, str, int], Any]:
    """Each row as JSON with its times left out and its episode id (which the agent sees too) blanked."""
    return {row.key: json.loads(row.model_dump_json(exclude=VOLATILE).replace(row.episode_id or "-", "EPISODE"))
            for row in rows}


def lines_per_key(out: Path) -> Counter[tuple[str, str, int]]:
    return Counter(row.key for row in RunDir(out).read_rows())


async def test_two_workers_give_the_rows_of_one_sharing_one_sqlite_store(provider: ScriptedProvider, tmp_path: Path):
    single = await run_batch(config(workers=1), tmp_path / "one", show_progress=False)
    seen: set[str] = set()

    def note_workers(row: ResultRow) -> None:
        seen.update(child.name for child in multiprocessing.active_children())

    multi = await BatchRunner(config(workers=2), tmp_path / "two", show_progress=False, on_row=note_workers).run()

    assert {"occusim-worker-0", "occusim-worker-1"} <= seen
    assert single.ran == multi.ran == 8 and all(row.status == "ok" for row in multi.rows)
    assert comparable(multi.rows) == comparable(single.rows)
    assert set(lines_per_key(tmp_path / "two").values()) == {1}
    async with Store(RunDir(tmp_path / "two").default_db) as store:
        episodes = await store.list_episodes()
        judged = [await store.load_judgment(row.episode_id) for row in multi.rows if row.episode_id]
    assert {episode.id for episode in episodes} == {row.episode_id for row in multi.rows}
    assert all(judgment is not None for judgment in judged)
    assert not multiprocessing.active_children()


@pytest.fixture
async def postgres_db() -> AsyncIterator[str]:
    """A database of its own on the test server, dropped afterwards."""
    import asyncpg

    name = f"occusim_workers_{uuid.uuid4().hex[:10]}"
    admin = POSTGRES_URL.replace("postgresql+asyncpg://", "postgresql://", 1)
    connection = await asyncpg.connect(admin)
    try:
        await connection.execute(f'CREATE DATABASE "{name}"')
    finally:
        await connection.close()
    yield POSTGRES_URL.rsplit("/", 1)[0] + "/" + name
    connection = await asyncpg.connect(admin)
    try:
        await connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await connection.close()


@pytest.mark.postgres
async def test_two_workers_share_one_postgres_store(provider: ScriptedProvider, postgres_db: str, tmp_path: Path):
    summary = await run_batch(config(workers=2, db=postgres_db), tmp_path / "out", show_progress=False)

    assert summary.ran == 8 and all(row.status == "ok" for row in summary.rows)
    assert not (tmp_path / "out" / "episodes.db").exists()
    async with Store(postgres_db) as store:
        episodes = await store.list_episodes()
    assert sorted(episode.id for episode in episodes) == sorted(row.episode_id for row in summary.rows)
    assert all(episode.status == "judged" for episode in episodes)


@pytest.mark.load
async def test_a_killed_worker_process_has_its_episodes_run_again(provider: ScriptedProvider, tmp_path: Path):
    killed: list[int] = []

    def kill_one_worker(row: ResultRow) -> None:
        if not killed:
            victim = next(child for child in multiprocessing.active_children() if child.name == "occusim-worker-1")
            assert victim.pid is not None
            os.kill(victim.pid, signal.SIGKILL)
            killed.append(victim.pid)

    summary = await BatchRunner(config(workers=2, trials=3), tmp_path / "out", show_progress=False,
                                on_row=kill_one_worker).run()

    assert killed
    assert sorted(row.key for row in summary.rows) == sorted(
        (task, mode, trial) for task in (TASK_A, TASK_B) for mode in ("E0", "E2") for trial in range(3))
    assert all(row.status == "ok" for row in summary.rows)
    # The killed worker held episodes: each ran again elsewhere and counts the lost attempt.
    assert any(row.attempts == 2 for row in summary.rows)
    assert set(lines_per_key(tmp_path / "out").values()) == {1}


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def run_args(out: Path, *extra: str) -> list[str]:
    return ["run", "--agent-model", "openai/fake-agent", "--world-model", "openai/fake-world", "--judge-model",
            "openai/fake-judge", "--tasks", TASKS, "--faults", "E0,E2", "--trials", "3", "--seed", "5",
            "--concurrency", "2", "--no-cache", "--no-progress", "--out", str(out), *extra]


@pytest.mark.load
def test_a_run_killed_with_its_workers_resumes_with_one_row_per_combination(tmp_path: Path):
    fake = ScriptedProvider(replay_responders(policy), latency=0.2)
    out = tmp_path / "out"
    with fake.running():
        env = {**os.environ, **fake.environment(), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        driver = subprocess.Popen([sys.executable, "-m", "occusim", *run_args(out, "--workers", "2")], env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 120
            while len(RunDir(out).read_rows()) < 2:
                assert driver.poll() is None, driver.stderr.read() if driver.stderr else ""
                assert time.monotonic() < deadline, "no row within 120 s"
                time.sleep(0.1)
            workers = _children(driver.pid)
            os.kill(driver.pid, signal.SIGKILL)
            driver.wait()
        finally:
            if driver.poll() is None:
                driver.kill()
        first = RunDir(out).read_rows()
        assert 2 <= len(first) < 12 and len(workers) >= 2
        # Orphaned workers stop on their own rather than keep running episodes nobody records.
        deadline = time.monotonic() + 20
        while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not any(_alive(pid) for pid in workers)

        os.environ.update(fake.environment())
        try:
            assert main(run_args(out, "--workers", "2")) == 0
        finally:
            for name in fake.environment():
                os.environ.pop(name, None)

    counts = lines_per_key(out)
    assert len(counts) == 12 and set(counts.values()) == {1}
    config_, rows = load_rows(out)
    assert all(row.status == "ok" for row in rows) and config_.workers == 2
    # The rows written before the kill are kept as they were.
    kept = {row.key: row for row in rows}
    assert all(kept[row.key].episode_id == row.episode_id for row in first)


def test_bad_worker_and_cost_settings_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    assert main(run_args(tmp_path / "a", "--workers", "0")) == 2
    assert "--workers 0" in capsys.readouterr().err
    assert main(run_args(tmp_path / "b", "--max-cost", "-1")) == 2
    assert "--max-cost" in capsys.readouterr().err
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_a_worker_takes_exactly_the_drivers_forwarded_variables(monkeypatch, tmp_path: Path):
    """Workers fork from a server started before the driver's environment was final: what the driver has at
    the run's start wins, a forwarded variable it no longer has included; other variables are left alone."""
    from occusim.clients._worker_spec import WorkerSpec, forwarded_environment

    # The server's environment, as a copy that the test may change (restored afterwards).
    monkeypatch.setattr(os, "environ", {"OCCUSIM_JUDGE_MODEL": "openai/stale", "OPENAI_API_KEY": "sk-stale",
                                        "PATH": "/usr/bin", "LANG": "C.UTF-8"})
    spec = WorkerSpec(config=config(), out=str(tmp_path), db="sqlite:///x.db",
                      environment={"OPENAI_API_KEY": "sk-driver", "OCCUSIM_WORLD_MODEL_MODEL": "openai/w"})

    spec.apply(exact=True)

    assert os.environ == {"OPENAI_API_KEY": "sk-driver", "OCCUSIM_WORLD_MODEL_MODEL": "openai/w",
                          "PATH": "/usr/bin", "LANG": "C.UTF-8"}
    assert forwarded_environment() == spec.environment

    os.environ["OCCUSIM_JUDGE_MODEL"] = "openai/node-own"
    spec.apply()  # a Ray actor on another node keeps the node's own other settings
    assert os.environ["OCCUSIM_JUDGE_MODEL"] == "openai/node-own"


@pytest.mark.parametrize(("concurrency", "cores", "models", "workers"), [
    (4, 8, ["openai/a"], 1),
    (128, 8, ["openai/a"], 1),
    (129, 8, ["openai/a"], 2),
    (256, 2, ["openai/a"], 2),
    (1024, 2, ["openai/a"], 2),
    (1024, 16, ["openai/a"], 8),
    (1024, 16, ["openai/a", "scripted/judge"], 1),
    (1024, 16, ["local"], 1),
])
def test_the_default_workers_follow_the_concurrency_up_to_the_cores(monkeypatch, concurrency, cores, models, workers):
    import argparse

    from occusim.clients.cli import run as run_command

    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: set(range(cores)), raising=False)
    args = argparse.Namespace(workers=None, executor="local", concurrency=concurrency)
    assert run_command._workers(args, models) == workers
    assert run_command._workers(argparse.Namespace(workers=3, executor="local", concurrency=concurrency), models) == 3
