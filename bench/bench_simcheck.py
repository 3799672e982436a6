"""What `occusim simcheck` costs beside the world model's own calls.

1. Scoring: every golden step of the bundled catalog scored against itself (entities, values, fields,
   state change), in ms of CPU per step.
2. Throughput: a full simcheck of the bundled catalog with a scripted world model that answers the golden
   step after L seconds, at concurrency N; steps x L / N is the bound, printed beside the measured time.
   Each step also costs about 20 ms of CPU (the world model's prompt and validation, the model gateway,
   the scoring) on one event loop, so a short L at a high N measures that CPU instead of the bound.

Environment: BENCH_LATENCY (seconds, default 0.5), BENCH_CONCURRENCY (comma-separated, default "16,64").
"""

from __future__ import annotations

import asyncio
import os
import time

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import _checkout  # noqa: F401, E402

from occusim.analysis._fidelity import GoldenAnswer, score_step  # noqa: E402
from occusim.clients import run_simcheck, select_checkable  # noqa: E402
from occusim.environments import apply_json_patch, load_catalog  # noqa: E402
from occusim.llm import scripted_model  # noqa: E402
from occusim.server import WorldModel  # noqa: E402
from tests.helpers import ReplayWorld  # noqa: E402

LATENCY = float(os.environ.get("BENCH_LATENCY", "0.5"))
CONCURRENCY = [int(part) for part in os.environ.get("BENCH_CONCURRENCY", "16,64").split(",")]


def scoring() -> None:
    catalog = load_catalog([])
    goldens = []
    for task in catalog.tasks.values():
        state, seen = catalog.initial_state(task), []
        for step in task.reference_solution:
            after = apply_json_patch(state, step.state_patch)
            goldens.append(GoldenAnswer(state_before=state, state_after=after, arguments=step.arguments,
                                      observation=step.observation, earlier_observations=tuple(seen)))
            seen.append(step.observation)
            state = after
    started = time.process_time()
    for golden in goldens:
        score_step(golden, golden.observation, golden.state_after)
    spent = time.process_time() - started
    print(f"scoring: {len(goldens)} golden steps in {spent:.2f} s CPU, {1000 * spent / len(goldens):.2f} ms per step")


async def throughput() -> None:
    catalog = load_catalog([])
    replay = ReplayWorld(catalog)

    async def slow(messages: list[dict], request: dict) -> dict:
        await asyncio.sleep(LATENCY)
        return replay(messages, request)

    model = scripted_model(slow, name="bench-slow-replay")
    tasks = select_checkable(catalog, "all")
    steps = sum(len(task.reference_solution) for task in tasks)
    await run_simcheck(catalog, tasks[:1], WorldModel(replay.model))  # warm up: litellm loads on first use
    for concurrency in CONCURRENCY:
        started = time.perf_counter()
        report = await run_simcheck(catalog, tasks, WorldModel(model), concurrency=concurrency)
        wall = time.perf_counter() - started
        bound = steps * LATENCY / concurrency
        print(f"throughput: {steps} steps, latency {LATENCY:g} s, concurrency {concurrency}: {wall:.1f} s "
              f"(bound {bound:.1f} s, ratio {bound / wall:.2f}); faithful {report.overall.faithful.rate:.1%}")


if __name__ == "__main__":
    scoring()
    asyncio.run(throughput())
