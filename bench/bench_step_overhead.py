"""Per-step server overhead of Episode.step on SQLite with a zero-latency scripted world model.

Prints p50/p99 of the total step time and of the server's own share (total minus the model time the
gateway measured, which is recorded in StepRecord.latency_ms).
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

from occusim.environments import FaultSettings  # noqa: E402
from occusim.server import EpisodeService, Store  # noqa: E402
from tests.helpers import CHEST_PAIN, TriageModel, triage_catalog  # noqa: E402

EPISODES = 20
STEPS = 10  # per episode (the task allows 12)
CALLS = [("list_patients", {}), ("get_patient", {"patient_id": "P2"}),
         ("set_priority", {"patient_id": "P1", "priority": 2})]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


async def run(faults: FaultSettings) -> tuple[list[float], list[float]]:
    with tempfile.TemporaryDirectory() as folder:
        store = Store(Path(folder) / "bench.db")
        await store.init()
        model = TriageModel()
        service = EpisodeService(triage_catalog(), store, world_model=model.model)
        totals, overheads = [], []
        warm = await service.create(CHEST_PAIN)
        await warm.step("list_patients", {})  # imports litellm and compiles the validators
        for _ in range(EPISODES):
            episode = await service.create(CHEST_PAIN, faults=faults)
            for index in range(STEPS):
                tool, arguments = CALLS[index % len(CALLS)]
                started = time.perf_counter()
                outcome = await episode.step(tool, arguments)
                total = (time.perf_counter() - started) * 1000
                totals.append(total)
                overheads.append(total - outcome.record.latency_ms)
        await store.close()
    return totals, overheads


def report(label: str, totals: list[float], overheads: list[float]) -> None:
    print(f"{label:<24} steps={len(totals):>4}  total p50={percentile(totals, 50):6.2f} ms "
          f"p99={percentile(totals, 99):6.2f} ms | server only p50={percentile(overheads, 50):6.2f} ms "
          f"p99={percentile(overheads, 99):6.2f} ms mean={statistics.fmean(overheads):6.2f} ms "
          f"| server share of total p50={percentile(overheads, 50) / percentile(totals, 50):.0%}")


async def run_concurrently(episodes: int = 100, steps: int = 5) -> None:
    """Throughput with many episodes stepping at once in one process (one event loop)."""
    with tempfile.TemporaryDirectory() as folder:
        store = Store(Path(folder) / "bench.db")
        await store.init()
        model = TriageModel()
        service = EpisodeService(triage_catalog(), store, world_model=model.model)
        running = [await service.create(CHEST_PAIN) for _ in range(episodes)]

        async def drive(episode) -> None:
            for index in range(steps):
                await episode.step("set_priority", {"patient_id": "P1", "priority": 1 + index % 5})

        started = time.perf_counter()
        await asyncio.gather(*(drive(episode) for episode in running))
        elapsed = time.perf_counter() - started
        stored = sum([len((await store.load_episode(e.id)).steps) for e in running])
        await store.close()
    print(f"{episodes} episodes at once  steps={episodes * steps}  {episodes * steps / elapsed:6.0f} steps/s "
          f"({elapsed * 1000 / (episodes * steps):.2f} ms per step)  stored={stored} (lost {episodes * steps - stored})")


async def main() -> None:
    print(f"Episode.step on SQLite (WAL), scripted zero-latency world model, {EPISODES}x{STEPS} steps")
    for label, faults in (("clean (E0)", FaultSettings()), ("mixed faults (E3)", FaultSettings(mode="E3"))):
        report(label, *(await run(faults)))
    await run_concurrently()


if __name__ == "__main__":
    asyncio.run(main())
