"""Batch throughput of `occusim run --workers N` against a scripted OpenAI-compatible endpoint over HTTP.

The endpoint runs in a process of its own (so that it does not share the runner's CPU bookkeeping) and
answers every call after L seconds: the agent and the world model replay two bundled tasks' reference
solutions, the judge passes. The bench runs the same combinations with 1 worker and with N (default the
number of cores) at one total concurrency, and prints episodes per hour, the driver's and the workers'
CPU per episode, and the ratio of N workers to 1. The rows of both runs must be the same episodes.

Environment: BENCH_LATENCY (seconds per call, default 0.05), BENCH_TRIALS (per task, default 16),
BENCH_CONCURRENCY (total, default 32), BENCH_WORKERS (default os.cpu_count()).
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import resource
import tempfile
import time
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import _checkout  # noqa: F401, E402

from occusim.analysis import RunConfig
from occusim.clients import run_batch  # noqa: E402
from tests.helpers import (  # noqa: E402
    TASK_A,
    TASK_B,
    ScriptedProvider,
    replay_responders,
)

LATENCY = float(os.environ.get("BENCH_LATENCY", "0.05"))
TRIALS = int(os.environ.get("BENCH_TRIALS", "16"))
CONCURRENCY = int(os.environ.get("BENCH_CONCURRENCY", "32"))
WORKERS = int(os.environ.get("BENCH_WORKERS", str(os.cpu_count() or 1)))


def _serve(urls: Any, stop: Any) -> None:
    provider = ScriptedProvider(replay_responders(), latency=LATENCY)
    with provider.running():
        urls.put(provider.environment())
        stop.wait()


def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


async def _run(workers: int, folder: str) -> dict[str, float]:
    config = RunConfig(agent_model="openai/fake-agent", world_model="openai/fake-world",
                       judge_model="openai/fake-judge", tasks=f"{TASK_A},{TASK_B}", faults=["E0"], trials=TRIALS,
                       concurrency=CONCURRENCY, cache=False, workers=workers)
    driver_before, children_before = _cpu()
    started = time.perf_counter()
    summary = await run_batch(config, os.path.join(folder, f"w{workers}"), show_progress=False)
    wall = time.perf_counter() - started
    driver_after, children_after = _cpu()
    ok = sum(1 for row in summary.rows if row.status == "ok")
    assert ok == len(summary.rows) == 2 * TRIALS, [row.error for row in summary.rows if row.error][:3]
    return {"episodes": ok, "wall": wall, "per_hour": ok * 3600 / wall,
            "driver_ms": (driver_after - driver_before) * 1000 / ok,
            "workers_ms": (children_after - children_before) * 1000 / ok}


def main() -> None:
    context = multiprocessing.get_context("spawn")
    urls, stop = context.Queue(), context.Event()
    server = context.Process(target=_serve, args=(urls, stop), daemon=True)
    server.start()
    os.environ.update(urls.get(timeout=120))
    try:
        with tempfile.TemporaryDirectory() as folder:
            one = asyncio.run(_run(1, folder))
            many = asyncio.run(_run(WORKERS, folder))
    finally:
        stop.set()
        server.join(timeout=10)
    print(f"bench_batch_workers: {2 * TRIALS} episodes, concurrency {CONCURRENCY}, {LATENCY * 1000:.0f} ms per call, "
          f"{os.cpu_count()} cores")
    for name, figures in (("1 worker", one), (f"{WORKERS} workers", many)):
        print(f"  {name:<10} {figures['per_hour']:>9,.0f} episodes/h  wall {figures['wall']:6.1f} s  CPU per episode: "
              f"driver {figures['driver_ms']:6.1f} ms, workers {figures['workers_ms']:6.1f} ms")
    print(f"  {WORKERS} workers / 1 worker: {many['per_hour'] / one['per_hour']:.2f}x episodes per hour")


if __name__ == "__main__":
    main()
