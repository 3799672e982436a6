"""How fast `occusim view` answers on a large run: the index (results.jsonl read and filtered at each
request) and one episode's page (timeline replayed from the store), through the real app in process.

It writes a run folder of N episodes (result rows with a 12-message transcript each; S steps per episode in
a SQLite store, one in three with an E2 fault beside its truth), then times M requests of each page and
prints the median and the 95th percentile, and the ratio to the budget a person waits without noticing
(index 1 s, episode page 0.5 s); and the same for the index of the store alone (`occusim view --db`,
the hosted pages), which reads the summaries, the verdicts and the steps' faults and flags.

Environment: BENCH_EPISODES (default 500), BENCH_STEPS (default 8), BENCH_REQUESTS (default 20).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import _checkout  # noqa: F401, E402
import httpx2  # noqa: E402

from occusim.analysis import ResultRow, RunConfig, RunDir
from occusim.clients import RunEpisodes  # noqa: E402
from occusim.environments import EpisodeRecord, FaultSettings, InjectedFault, StepRecord, Usage  # noqa: E402
from occusim.server import Store  # noqa: E402
from occusim.service import StoreEpisodes
from occusim.viewer import viewer_app  # noqa: E402
from tests.helpers import transcript  # noqa: E402

EPISODES = int(os.environ.get("BENCH_EPISODES", "500"))
STEPS = int(os.environ.get("BENCH_STEPS", "8"))
REQUESTS = int(os.environ.get("BENCH_REQUESTS", "20"))
BUDGET = {"index": 1.0, "filtered index": 1.0, "episode": 0.5, "store index": 1.0}


async def write_run(folder: Path) -> None:
    run_dir = RunDir(folder)
    run_dir.write_config(RunConfig(agent_model="agent", world_model="world", judge_model="judge"))
    state = {"orders": {f"O-{n}": {"status": "open", "lines": list(range(20))} for n in range(40)}}
    async with Store(folder / "episodes.db") as store:
        for number in range(EPISODES):
            episode_id = f"ep-{number:05d}"
            faulted = number % 3 == 0
            await store.create_episode(EpisodeRecord(
                id=episode_id, task_id=f"desk/task-{number % 25}", scenario_id="desk", world_model="world",
                faults=FaultSettings(mode="E2" if faulted else "E0"), initial_state=state, state=state))
            for index in range(STEPS):
                truth = {"order": f"O-{index}", "lines": list(range(20)), "status": "open"}
                step = StepRecord(
                    index=index, tool="get_order", arguments={"order_id": f"O-{index}"},
                    observation={**truth, "lines": truth["lines"][:5]} if faulted and index == 1 else truth,
                    true_observation=truth if faulted and index == 1 else None,
                    fault=InjectedFault(kind="implicit", label="truncate_list") if faulted and index == 1 else None,
                    state_patch=[{"op": "replace", "path": f"/orders/O-{index}/status", "value": "seen"}],
                    usage=Usage(prompt_tokens=900, completion_tokens=80, calls=1), latency_ms=900.0)
                await store.append_step(episode_id, step, state)
            await store.close_episode(episode_id, status="submitted", final_answer="done")
            run_dir.append_row(ResultRow(
                task_id=f"desk/task-{number % 25}", scenario_id="desk", category="Commerce & Consumer", difficulty=1,
                fault_mode="E2" if faulted else "E0", fault_count=2, fault_duration=2, trial=number // 25, seed=0,
                agent_model="agent", world_model="world", judge_model="judge", transport="inprocess", status="ok",
                episode_id=episode_id, score=1.0, passed=number % 2 == 0, steps=STEPS,
                messages=transcript("desk", "done") * 2, final_answer="done"))


async def time_pages(folder: Path) -> dict[str, list[float]]:
    async with Store(folder / "episodes.db") as store:
        app = viewer_app(RunEpisodes(RunDir(folder), store))
        timings: dict[str, list[float]] = {name: [] for name in BUDGET}
        paths = {"index": "/", "filtered index": "/?fault=E2&passed=yes", "episode": "/episodes/ep-00003"}
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://127.0.0.1") as http:
            for name, path in paths.items():
                for _ in range(REQUESTS):
                    started = time.perf_counter()
                    response = await http.get(path)
                    timings[name].append(time.perf_counter() - started)
                    assert response.status_code == 200, response.text[:300]
        # A store alone (`occusim view --db`, the hosted pages).
        store_app = viewer_app(StoreEpisodes(store))
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=store_app),
                                      base_url="http://127.0.0.1") as http:
            for name in ["store index"] * REQUESTS:
                started = time.perf_counter()
                response = await http.get("/")
                timings[name].append(time.perf_counter() - started)
                assert response.status_code == 200, response.text[:300]
        return timings


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "run"
        started = time.perf_counter()
        await write_run(folder)
        size = (folder / "results.jsonl").stat().st_size / 2**20
        print(f"run folder: {EPISODES} episodes x {STEPS} steps, results.jsonl {size:.1f} MiB "
              f"(written in {time.perf_counter() - started:.1f} s)")
        for name, seconds in (await time_pages(folder)).items():
            median = statistics.median(seconds)
            p95 = statistics.quantiles(seconds, n=20)[-1] if len(seconds) > 1 else seconds[0]
            print(f"{name:>15}: median {median * 1000:7.1f} ms, p95 {p95 * 1000:7.1f} ms over {len(seconds)} requests; "
                  f"median / budget {BUDGET[name]:.1f} s = {median / BUDGET[name]:.2f}")


if __name__ == "__main__":
    asyncio.run(main())
