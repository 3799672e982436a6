"""occusim's hosted service beside a bare MCP SDK server, same client load, one run: N sessions of the
official SDK client, each making 4 `get_patient` calls. The bare server's tool sleeps 0.5 s; occusim's world
model answers after 0.5 s (`scripted/triage-slow`), and each of its sessions is created through
`POST /v1/episodes` first (counted). Prints calls/s, p50 call latency and server CPU per call, and the ratios.

    .venv/bin/python bench/bench_hosted_vs_sdk.py [SESSIONS ...]   (default 10 100 500)
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import httpx
import httpx2
from _served import API_KEY, TASK, percentile, served
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.helpers import free_port

CALLS_PER_SESSION = 4
LATENCY = 0.5
HERE = Path(__file__).resolve().parent


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def bare_server() -> Iterator[tuple[str, int]]:
    port = free_port()
    process = subprocess.Popen([sys.executable, str(HERE / "_bare_sdk_server.py"), str(port)])
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the bare server did not start")
            with contextlib.suppress(httpx.TransportError):
                httpx.get(url, timeout=1)
                break
            time.sleep(0.1)
        yield url, process.pid
    finally:
        process.terminate()
        process.wait(timeout=30)


async def idle(pid: int, *, share: float = 0.05, within: float = 300) -> None:
    """Until the process uses under `share` of a core for a second."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        before = cpu_seconds(pid)
        await asyncio.sleep(1)
        if cpu_seconds(pid) - before < share:
            return
    print(f"  process {pid} still busy after {within:.0f} s", file=sys.stderr)


Opener = Callable[[], Awaitable[tuple[str, dict[str, str]]]]


async def session(open_session: Opener, latencies: list[float], errors: list[str], start: asyncio.Event) -> None:
    await start.wait()
    try:
        url, headers = await open_session()
        async with httpx2.AsyncClient(headers=headers, timeout=600) as http:
            async with Client(streamable_http_client(url, http_client=http)) as client:
                for _ in range(CALLS_PER_SESSION):
                    began = time.perf_counter()
                    result = await client.call_tool("get_patient", {"patient_id": "P2"})
                    latencies.append(time.perf_counter() - began)
                    if result.is_error:
                        errors.append(str(result.content)[:200])
    except Exception as error:  # counted, not raised: one failure must not hide the others' figures
        while isinstance(error, ExceptionGroup) and error.exceptions:  # the SDK's task groups wrap the cause
            error = error.exceptions[0]
        errors.append(f"{type(error).__name__}: {error}"[:300])


async def load(open_session: Opener, sessions: int, pid: int) -> dict[str, float]:
    latencies: list[float] = []
    errors: list[str] = []
    start = asyncio.Event()
    tasks = [asyncio.create_task(session(open_session, latencies, errors, start)) for _ in range(sessions)]
    cpu_before, began = cpu_seconds(pid), time.perf_counter()
    start.set()
    await asyncio.gather(*tasks)
    wall, cpu = time.perf_counter() - began, cpu_seconds(pid) - cpu_before
    calls = len(latencies)
    if errors:
        print(f"  {len(errors)} error(s), first: {errors[0]}", file=sys.stderr)
    return {"calls_per_s": calls / wall, "p50_ms": 1000 * percentile(latencies, 0.5) if latencies else 0.0,
            "cpu_ms_per_call": 1000 * cpu / max(calls, 1), "errors": float(len(errors)), "calls": float(calls)}


async def main(counts: list[int]) -> None:
    processes: list[subprocess.Popen[bytes]] = []
    with bare_server() as (bare_url, bare_pid), \
            served(world_model="scripted/triage-slow", env={"OCCUSIM_TEST_MODEL_DELAY": str(LATENCY)},
                   process_out=processes) as occusim_url:
        rest = httpx.AsyncClient(headers={"Authorization": f"Bearer {API_KEY}"}, timeout=600,
                                 limits=httpx.Limits(max_connections=200))

        async def bare() -> tuple[str, dict[str, str]]:
            return bare_url, {}

        async def hosted() -> tuple[str, dict[str, str]]:
            created = await rest.post(f"{occusim_url}/v1/episodes", json={"task_id": TASK})
            created.raise_for_status()
            episode = created.json()
            return episode["mcp_url"], {"Authorization": f"Bearer {episode['token']}"}

        # Warm both up first (imports on first use, caches, connection pools), and let the service finish
        # importing litellm in its background thread (tens of CPU seconds on a busy machine): the run then
        # measures the steady state.
        for opener, pid in ((bare, bare_pid), (hosted, processes[0].pid)):
            await load(opener, 10, pid)
            await idle(pid)
        print(f"{'sessions':>8} | {'server':<8} | {'calls/s':>8} | {'p50 ms':>7} | {'CPU ms/call':>11} | errors")
        for sessions in counts:
            figures = {}
            for name, opener, pid in (("bare", bare, bare_pid), ("occusim", hosted, processes[0].pid)):
                figures[name] = found = await load(opener, sessions, pid)
                print(f"{sessions:>8} | {name:<8} | {found['calls_per_s']:>8.1f} | {found['p50_ms']:>7.0f} | "
                      f"{found['cpu_ms_per_call']:>11.2f} | {found['errors']:.0f}")
            bare_f, ours = figures["bare"], figures["occusim"]
            print(f"{sessions:>8} | ratio    | {ours['calls_per_s'] / bare_f['calls_per_s']:>7.2f}x | "
                  f"{ours['p50_ms'] / max(bare_f['p50_ms'], 1e-9):>6.2f}x | "
                  f"{ours['cpu_ms_per_call'] / max(bare_f['cpu_ms_per_call'], 1e-9):>10.2f}x | "
                  "targets: >= 0.9x calls/s, <= 2x CPU")
        await rest.aclose()


if __name__ == "__main__":
    asyncio.run(main([int(n) for n in sys.argv[1:]] or [10, 100, 500]))
