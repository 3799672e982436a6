"""`occusim run --executor ray` on a local Ray cluster of 2 CPUs started here, against scripted models behind
a real OpenAI-compatible endpoint, with one Ray worker killed mid-run: every combination ends with one row."""

from __future__ import annotations

import os
import signal
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from occusim.analysis import ResultRow, RunConfig, RunDir
from occusim.clients._batch import BatchRunner
from occusim.clients._ray_executor import ACTOR_PREFIX
from tests.helpers import TASK_A, TASK_B, ScriptedProvider, replay_responders

pytestmark = [pytest.mark.load, pytest.mark.ray]


@pytest.fixture
def cluster(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedProvider]:
    """The model endpoint, its variables set (the driver sends them to the actors), and a 2-CPU Ray cluster."""
    fake = ScriptedProvider(replay_responders(), latency=0.1)
    import ray

    with fake.running():
        for name, value in fake.environment().items():
            monkeypatch.setenv(name, value)
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        try:
            yield fake
        finally:
            ray.shutdown()


def _kill_one_actor(killed: list[int]) -> None:
    """SIGKILL the process of one of the run's actors (they all run on this machine)."""
    import ray

    names = sorted(entry["name"] for entry in ray.util.list_named_actors(all_namespaces=True)
                   if entry["name"].startswith(ACTOR_PREFIX))
    namespaces = {entry["name"]: entry["namespace"] for entry in ray.util.list_named_actors(all_namespaces=True)}
    actor = ray.get_actor(names[-1], namespace=namespaces[names[-1]])
    pid = ray.get(actor.pid.remote())
    os.kill(pid, signal.SIGKILL)
    killed.append(pid)


async def test_a_ray_run_with_a_killed_worker_ends_with_one_row_per_combination(cluster: ScriptedProvider,
                                                                              tmp_path: Path):
    config = RunConfig(agent_model="openai/fake-agent", world_model="openai/fake-world",
                       judge_model="openai/fake-judge", tasks=f"{TASK_A},{TASK_B}", faults=["E0", "E2"], trials=3,
                       seed=3, concurrency=4, cache=False, executor="ray")
    killed: list[int] = []
    killer: list[threading.Thread] = []

    def on_row(row: ResultRow) -> None:
        # From another thread: the driver's loop must keep running while the actor is found and killed.
        if not killer:
            killer.append(threading.Thread(target=_kill_one_actor, args=(killed,)))
            killer[0].start()

    summary = await BatchRunner(config, tmp_path / "out", show_progress=False, on_row=on_row).run()
    killer[0].join()

    every = sorted((task, mode, trial) for task in (TASK_A, TASK_B) for mode in ("E0", "E2") for trial in range(3))
    assert killed
    assert sorted(row.key for row in summary.rows) == every
    assert all(row.status == "ok" for row in summary.rows)
    lines: Counter[Any] = Counter(row.key for row in RunDir(tmp_path / "out").read_rows())
    assert set(lines.values()) == {1}
    # The killed actor held episodes; they ran again and count the lost attempt.
    assert any(row.attempts >= 2 for row in summary.rows)
    assert (tmp_path / "out" / "episodes.db").is_file()
