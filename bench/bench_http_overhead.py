"""What MCP over HTTP adds to a tool call, with a scripted world model. Target: overhead p50 <= 5 ms.

The service runs on a real uvicorn in a thread of this process; each call's time inside `Episode.step`
(world model, validation, store commit) is measured on the server side and subtracted from the time the
SDK client waited, call by call, so the figure holds even on a busy machine.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path

import _checkout  # noqa: F401
import httpx
from _served import TASK, bench_scenario, percentile

from occusim.environments import Catalog, Scenario
from occusim.server._episode import Episode
from tests.helpers import LiveServer, hosted_settings, mcp_session

CALLS = 300
WARMUP = 20
CALL = ("get_patient", {"patient_id": "P2"})

step_ms: list[float] = []
_step = Episode.step


async def _timed_step(self: Episode, tool: str, arguments: dict | None = None):
    start = time.perf_counter()
    try:
        return await _step(self, tool, arguments)
    finally:
        step_ms.append((time.perf_counter() - start) * 1000)


async def measure(server: LiveServer, mode: str) -> tuple[list[float], list[float]]:
    """Client-side totals and server-side step times of CALLS calls on one episode."""
    async with httpx.AsyncClient() as rest:
        created = (await rest.post(f"{server.url}/v1/episodes", json={"task_id": TASK},
                                   headers=server.headers())).json()
    totals: list[float] = []
    inside: list[float] = []
    async with mcp_session(created["mcp_url"], created["token"], mode) as client:
        await client.list_tools()
        for round_ in range(WARMUP + CALLS):
            step_ms.clear()
            start = time.perf_counter()
            await client.call_tool(*CALL)
            if round_ >= WARMUP:
                totals.append((time.perf_counter() - start) * 1000)
                inside.append(step_ms[0])
    return totals, inside


def main() -> None:
    Episode.step = _timed_step  # type: ignore[method-assign]  (times every step the service runs)
    catalog = Catalog()
    catalog.add(Scenario.model_validate(bench_scenario(CALLS + WARMUP)), "bench")
    print(f"bench_http_overhead: {CALLS} calls of {CALL[0]} per row, scripted world model, SQLite store")
    with tempfile.TemporaryDirectory() as folder, LiveServer(hosted_settings(Path(folder)), catalog) as server:
        for name, mode in (("2026-07-28", "auto"), ("legacy session", "legacy")):
            totals, inside = asyncio.run(measure(server, mode))
            overhead = [total - step for total, step in zip(totals, inside, strict=True)]
            print(f"  {name:<15} call p50 {percentile(totals, 0.5):6.2f} ms (Episode.step {percentile(inside, 0.5):6.2f})"
                  f" | overhead p50 {percentile(overhead, 0.5):5.2f} ms, p99 {percentile(overhead, 0.99):6.2f} ms"
                  " (target p50 <= 5 ms)")


if __name__ == "__main__":
    main()
