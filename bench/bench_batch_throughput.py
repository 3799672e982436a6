"""Batch throughput of `occusim run` against a fake model endpoint with a fixed latency per call.

Every model (agent, world model, judge) is a scripted model that sleeps L seconds per call. An episode
makes CALLS sequential model calls (3 agent turns, 2 simulated tool calls, 1 judge vote), so N concurrent
episodes can at best finish N x 3600 / (CALLS x L) episodes per hour. The bench prints the measured rate
as a fraction of that bound (target >= 90%) at concurrency 64 and 256.

The default L of 5 s is a typical hosted-model call; the runner's own cost is about 40-60 ms of CPU per
episode (model gateway, store, MCP, judging) on one event loop, so the bound is reachable while
concurrency x that cost stays well under CALLS x L.

Environment: BENCH_LATENCY (seconds, default 5), BENCH_WAVES (episodes per worker, default 2),
BENCH_CONCURRENCY (comma-separated, default "64,256"), BENCH_DB (episode store URL, e.g. a dedicated
PostgreSQL database; default a SQLite file in the run folder).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
import tempfile
import time

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from occusim.analysis import RunConfig, compute_metrics
from occusim.clients import run_batch  # noqa: E402
from occusim.environments import SUBMIT_TOOL, Catalog, Scenario  # noqa: E402
from occusim.llm import ScriptedReply, scripted_model  # noqa: E402

LATENCY = float(os.environ.get("BENCH_LATENCY", "5.0"))
WAVES = int(os.environ.get("BENCH_WAVES", "2"))
CONCURRENCY = [int(part) for part in os.environ.get("BENCH_CONCURRENCY", "64,256").split(",")]
DB = os.environ.get("BENCH_DB")
CALLS = 3 + 2 + 1

SCENARIO = {
    "id": "parcel-desk",
    "name": "Parcel desk",
    "category": "Transportation & Logistics",
    "domain": "Courier depot",
    "occupation": "Depot clerk",
    "summary": "Look up parcels and mark them delivered.",
    "rules": "A parcel can be marked delivered once.",
    "tools": [
        {"name": "get_parcel", "description": "Read a parcel.",
         "input_schema": {"type": "object", "properties": {"parcel_id": {"type": "string"}},
                          "required": ["parcel_id"], "additionalProperties": False},
         "output_schema": {"type": "object", "properties": {"parcel_id": {"type": "string"},
                                                             "status": {"type": "string"}}}},
        {"name": "mark_delivered", "description": "Mark a parcel delivered.",
         "input_schema": {"type": "object", "properties": {"parcel_id": {"type": "string"}},
                          "required": ["parcel_id"], "additionalProperties": False}},
    ],
    "state_descriptions": {"parcels": "Parcels by id."},
    "initial_state": {"parcels": {"P1": {"status": "at_depot"}}},
    "tasks": [{
        "id": "parcel-desk/deliver",
        "title": "Deliver P1",
        "instruction": "Check parcel P1 and mark it delivered.",
        "difficulty": 1,
        "max_steps": 6,
        "rubric": {"items": [
            {"id": "delivered", "kind": "state", "description": "P1 delivered",
             "checks": [{"pointer": "/parcels/P1/status", "op": "eq", "value": "delivered"}]},
            {"id": "answer", "kind": "llm", "description": "The answer", "checks": ["The answer says delivered"]},
        ]},
    }],
}

_CALL = re.compile(r"### Call \d+\n(\{.*\})")


async def agent(messages: list[dict], request: dict) -> ScriptedReply:
    await asyncio.sleep(LATENCY)
    done = sum(1 for message in messages if message["role"] == "tool")
    plan = ["get_parcel", "mark_delivered"]
    if done < len(plan):
        return ScriptedReply(tool_calls=[{"name": plan[done], "arguments": {"parcel_id": "P1"}}])
    return ScriptedReply(tool_calls=[{"name": SUBMIT_TOOL, "arguments": {"answer": "P1 delivered"}}])


async def world(messages: list[dict], request: dict) -> dict:
    await asyncio.sleep(LATENCY)
    call = json.loads(_CALL.search(messages[-1]["content"]).group(1))
    if call["name"] == "get_parcel":
        return {"observation": {"parcel_id": "P1", "status": "at_depot"}, "state_patch": []}
    return {"observation": {"ok": True},
            "state_patch": [{"op": "replace", "path": "/parcels/P1/status", "value": "delivered"}]}


async def judge(messages: list[dict], request: dict) -> dict:
    await asyncio.sleep(LATENCY)
    ids = request["response_schema"]["properties"]["verdicts"]["required"]
    return {"verdicts": {check_id: {"passed": True, "reason": "ok", "evidence_steps": []} for check_id in ids}}


def config(models: tuple[str, str, str], concurrency: int, episodes: int) -> RunConfig:
    return RunConfig(agent_model=models[0], world_model=models[1], judge_model=models[2],
                     tasks="parcel-desk/deliver", trials=episodes, concurrency=concurrency, judge_votes=1,
                     episode_timeout=600, db=DB)


async def measure(concurrency: int, catalog: Catalog, models: tuple[str, str, str]) -> None:
    episodes = concurrency * WAVES
    with tempfile.TemporaryDirectory() as folder:
        started, cpu = time.perf_counter(), time.process_time()
        summary = await run_batch(config(models, concurrency, episodes), folder, catalog=catalog,
                                  show_progress=False)
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    metrics = compute_metrics(summary.rows)
    rate = episodes * 3600 / elapsed
    bound = concurrency * 3600 / (CALLS * LATENCY)
    print(f"concurrency {concurrency:>4}: {episodes} episodes in {elapsed:6.1f} s -> {rate:9.0f} episodes/h; "
          f"bound {bound:9.0f}/h; {rate / bound:6.1%} of bound; cpu {cpu / episodes * 1000:5.1f} ms/episode; "
          f"passed {metrics.completion.passed}/{metrics.completion.total}, infra errors {metrics.infra_errors}")


async def main() -> int:
    catalog = Catalog()
    catalog.add(Scenario.model_validate(SCENARIO), "bench")
    models = (scripted_model(agent, name="bench-agent"), scripted_model(world, name="bench-world"),
              scripted_model(judge, name="bench-judge"))
    print(f"fake endpoint latency L = {LATENCY} s, {CALLS} sequential model calls per episode, {WAVES} episodes "
          f"per concurrent slot, in-process MCP, store {DB or 'SQLite'}")
    # One untimed episode first: litellm's first call sets itself up for seconds, once per process.
    with tempfile.TemporaryDirectory() as folder:
        await run_batch(config(models, 1, 1), folder, catalog=catalog, show_progress=False)
    for concurrency in CONCURRENCY:
        await measure(concurrency, catalog, models)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
