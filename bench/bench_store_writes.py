"""CPU per step write of a SQLite store (the process's CPU, every thread), for episodes writing one at a time and
for many at once, where the writer thread commits the writes queued together in one transaction.

Prints microseconds of CPU and of wall time per write, and the ratio of the concurrent figure to the one at a
time (each write in its own transaction there).

    python bench/bench_store_writes.py [--episodes 64] [--steps 16]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from occusim.environments import EpisodeRecord, StepRecord
from occusim.server import Store

STATE = {"stations": [{"id": f"S{n}", "reading": n * 1.5, "status": "ok"} for n in range(12)], "note": "x" * 200}


def step(index: int) -> StepRecord:
    return StepRecord(index=index, tool="read_station", arguments={"station": "S3"},
                      observation={"status": "ok", "reading": 4.5, "items": [1, 2, 3]}, state_hash="h")


async def measure(store: Store, episodes: int, steps: int, *, at_once: bool, prefix: str) -> tuple[float, float]:
    ids = [f"{prefix}-{n}" for n in range(episodes)]
    for episode_id in ids:
        await store.create_episode(EpisodeRecord(id=episode_id, task_id="t", scenario_id="s", initial_state=STATE,
                                                 state=STATE))

    async def write(episode_id: str) -> None:
        for index in range(steps):
            await store.append_step(episode_id, step(index), STATE)

    cpu, wall = time.process_time(), time.perf_counter()
    if at_once:
        await asyncio.gather(*(write(episode_id) for episode_id in ids))
    else:
        for episode_id in ids:
            await write(episode_id)
    writes = episodes * steps
    return (time.process_time() - cpu) / writes * 1e6, (time.perf_counter() - wall) / writes * 1e6


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=64)
    parser.add_argument("--steps", type=int, default=16)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        async with Store(Path(folder) / "bench.db") as store:
            alone = await measure(store, args.episodes, args.steps, at_once=False, prefix="alone")
            together = await measure(store, args.episodes, args.steps, at_once=True, prefix="together")
    print(f"SQLite store, {args.episodes} episodes x {args.steps} step writes")
    print(f"  one write at a time        CPU {alone[0]:6.0f} us/write  wall {alone[1]:6.0f} us/write")
    print(f"  {args.episodes} episodes at once       CPU {together[0]:6.0f} us/write  wall {together[1]:6.0f} us/write"
          f"  ({together[0] / alone[0]:.2f}x the CPU of one at a time)")


if __name__ == "__main__":
    asyncio.run(main())
