"""Memory held per open episode with 1,000 episodes open at once, each a few steps in. Target: < 1 MB each."""

from __future__ import annotations

import asyncio
import gc
import os
import tempfile
import tracemalloc
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import _checkout  # noqa: F401, E402

from occusim.environments import FaultSettings  # noqa: E402
from occusim.server import EpisodeService, Store  # noqa: E402
from tests.helpers import CHEST_PAIN, TriageModel, triage_catalog  # noqa: E402

EPISODES = 1000
STEPS = 4
CALLS = [("list_patients", {}), ("get_patient", {"patient_id": "P1"}),
         ("set_priority", {"patient_id": "P1", "priority": 1}), ("get_patient", {"patient_id": "P9"})]


def rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        pages = int(statm.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


async def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        store = Store(Path(folder) / "bench.db")
        await store.init()
        model = TriageModel()
        service = EpisodeService(triage_catalog(), store, world_model=model.model)
        warm = await service.create(CHEST_PAIN)
        for tool, arguments in CALLS:
            await warm.step(tool, arguments)
        service.forget(warm.id)
        # Let the model's request log go, so only the episodes are measured.
        model.requests.clear()

        gc.collect()
        rss_before = rss_mb()
        tracemalloc.start()
        before = tracemalloc.take_snapshot()
        for number in range(EPISODES):
            episode = await service.create(CHEST_PAIN, faults=FaultSettings(mode="E3", seed=number))
            for tool, arguments in CALLS[:STEPS]:
                await episode.step(tool, arguments)
            model.requests.clear()
        gc.collect()
        after = tracemalloc.take_snapshot()
        tracemalloc.stop()
        rss_after = rss_mb()
        traced = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
        assert len(service.open_episodes) == EPISODES
        await store.close()

    per_episode_kb = traced / EPISODES / 1024
    print(f"{EPISODES} open episodes, {STEPS} steps each (SQLite store, scripted world model)")
    print(f"  Python heap growth (tracemalloc): {traced / 2**20:7.1f} MB -> {per_episode_kb:6.1f} KB per episode")
    print(f"  RSS growth (tracing on, so inflated): {rss_after - rss_before:7.1f} MB -> "
          f"{(rss_after - rss_before) * 1024 / EPISODES:6.1f} KB per episode")
    print(f"  target < 1 MB per episode: {'met' if per_episode_kb < 1024 else 'NOT met'}")


if __name__ == "__main__":
    asyncio.run(main())
