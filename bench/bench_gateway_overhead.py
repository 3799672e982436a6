"""Per-call overhead of occusim.llm.complete() on a scripted model, with the response cache off and on."""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from occusim.llm import ResponseCache, complete, scripted_model  # noqa: E402

CALLS = int(os.environ.get("BENCH_CALLS", "200"))
MESSAGES = [
    {"role": "system", "content": "You simulate a hospital triage desk. Answer with JSON."},
    {"role": "user", "content": "list_waiting_patients {}"},
]


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


async def measure(label: str, model: str, cache: ResponseCache | bool) -> None:
    await complete(model, MESSAGES, cache=cache)  # warm-up: litellm import and first-call setup
    samples = []
    for _ in range(CALLS):
        started = time.perf_counter()
        await complete(model, MESSAGES, cache=cache)
        samples.append((time.perf_counter() - started) * 1000.0)
    print(
        f"{label:<28} n={CALLS:<5} p50={statistics.median(samples):7.2f} ms  "
        f"p99={percentile(samples, 0.99):7.2f} ms  mean={statistics.fmean(samples):7.2f} ms"
    )


async def main() -> int:
    model = scripted_model(lambda messages, request: {"patients": [{"id": "P-1", "priority": 2}]}, name="bench")
    with tempfile.TemporaryDirectory() as folder:
        cache = ResponseCache(Path(folder) / "bench.sqlite")
        await measure("complete() cache off", model, False)
        await measure("complete() cache hit", model, cache)
        cache.close()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
