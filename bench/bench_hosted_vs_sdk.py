"""occusim's hosted service beside a bare MCP SDK server, same client load, one run: N sessions of the
official SDK client, each making 4 `get_patient` calls. The bare server's tool (the same contract as the
scenario's, bench/_bare_sdk_server.py) sleeps 0.5 s; occusim's world
model answers after 0.5 s, and each of its sessions is created through `POST /v1/episodes` first (counted).
The sessions are spread over client processes that start together. Prints calls/s, p50 call latency, server
CPU per call and the clients' CPU per call, and the ratios.

The world model is, as in a deployment, an OpenAI-compatible endpoint (`openai/fake-world`, bench/_fake_openai.py
in a process of its own, whose CPU is charged to neither side) answering the record after 0.5 s, with the
response cache off so that every call waits for it; `--scripted`
uses the in-process `scripted/triage-slow` instead, whose answers pass through litellm's mock path.

    .venv/bin/python bench/bench_hosted_vs_sdk.py [--scripted] [--client-processes N] [SESSIONS ...]
    (default: 2 client processes; 10 100 500 sessions)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing
import os
import ssl
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import aiohttp
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


@contextlib.contextmanager
def world_endpoint() -> Iterator[str]:
    """The fake OpenAI-compatible world model in its own process; yields its base URL."""
    answer = {"observation": {"id": "P2", "name": "Ben Okafor", "priority": 4, "notes": "sprained ankle",
                              "ward": "B"}, "state_patch": []}
    process = subprocess.Popen([sys.executable, str(HERE / "_fake_openai.py"), "--latency", str(LATENCY),
                                "--world-answer", json.dumps(answer)], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        yield process.stdout.readline().strip()
    finally:
        process.terminate()
        process.wait(timeout=30)


@contextlib.contextmanager
def world_model(scripted: bool) -> Iterator[tuple[str, dict[str, str]]]:
    """The service's --world-model and the environment it needs."""
    if scripted:
        yield "scripted/triage-slow", {"OCCUSIM_TEST_MODEL_DELAY": str(LATENCY)}
        return
    with world_endpoint() as base:
        # No response cache: each call waits for the model, as the bare server's tool waits its 0.5 s.
        yield "openai/fake-world", {"OPENAI_BASE_URL": base, "OPENAI_API_KEY": "bench", "OCCUSIM_NO_CACHE": "1"}


Opener = Callable[[], Awaitable[tuple[str, dict[str, str]]]]


@dataclass(frozen=True)
class Target:
    """What a client process connects to: the bare server's MCP URL, or occusim's base URL, where each
    session first creates its episode."""

    name: str
    url: str
    api_key: str | None = None


async def session(open_session: Opener, latencies: list[float], errors: list[str], tls: ssl.SSLContext) -> None:
    try:
        url, headers = await open_session()
        async with httpx2.AsyncClient(headers=headers, timeout=600, verify=tls) as http:
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


async def _sessions(target: Target, sessions: int, start_at: float) -> tuple[list[float], list[str], float, float]:
    latencies: list[float] = []
    errors: list[str] = []
    # One TLS context for every client (the connections are plain HTTP): left to itself, each client loads the
    # system's CA bundle, about 30 ms of CPU, more than the rest of a session's work in the client.
    tls = ssl.create_default_context()
    # The episodes are created with aiohttp: httpx's pool checks every pooled connection on each request,
    # which at 500 concurrent creations was a tenth of the client's CPU and held the POSTs back for seconds.
    credentials = {"Authorization": f"Bearer {target.api_key}"} if target.api_key else {}
    async with aiohttp.ClientSession(headers=credentials,
                                     connector=aiohttp.TCPConnector(limit=0),
                                     timeout=aiohttp.ClientTimeout(total=600)) as rest:

        async def bare() -> tuple[str, dict[str, str]]:
            return target.url, {}

        async def hosted() -> tuple[str, dict[str, str]]:
            async with rest.post(f"{target.url}/v1/episodes", json={"task_id": TASK}) as created:
                created.raise_for_status()
                episode = await created.json()
            return episode["mcp_url"], {"Authorization": f"Bearer {episode['token']}"}

        opener = bare if target.api_key is None else hosted
        await asyncio.sleep(max(0.0, start_at - time.time()))
        began = time.process_time()
        await asyncio.gather(*(session(opener, latencies, errors, tls) for _ in range(sessions)))
        return latencies, errors, time.process_time() - began, time.time()


def client_process(target: Target, sessions: int, start_at: float) -> tuple[list[float], list[str], float, float]:
    """One client process's share: `sessions` sessions from `start_at` (wall clock); their latencies, errors,
    this process's CPU seconds and when the last ended."""
    return asyncio.run(_sessions(target, sessions, start_at))


def load(clients: ProcessPoolExecutor, processes: int, target: Target, sessions: int, pid: int) -> dict[str, float]:
    """`sessions` sessions spread over the client processes, all starting together."""
    start_at = time.time() + 1.0  # time for every process to take its share before the start
    shares = [sessions // processes + (1 if i < sessions % processes else 0) for i in range(processes)]
    futures = [clients.submit(client_process, target, share, start_at) for share in shares if share]
    time.sleep(max(0.0, start_at - time.time()))
    cpu_before = cpu_seconds(pid)
    results = [future.result() for future in futures]
    cpu = cpu_seconds(pid) - cpu_before
    wall = max(ended for *_, ended in results) - start_at
    latencies = [latency for found, *_ in results for latency in found]
    errors = [error for _, found, *_ in results for error in found]
    client_cpu = sum(used for _, _, used, _ in results)
    calls = len(latencies)
    if errors:
        print(f"  {len(errors)} error(s), first: {errors[0]}", file=sys.stderr)
    return {"calls_per_s": calls / wall, "p50_ms": 1000 * percentile(latencies, 0.5) if latencies else 0.0,
            "cpu_ms_per_call": 1000 * cpu / max(calls, 1),
            "client_ms_per_call": 1000 * client_cpu / max(calls, 1), "errors": float(len(errors)), "calls": float(calls)}


def main(counts: list[int], scripted: bool, processes: int) -> None:
    servers: list[subprocess.Popen[bytes]] = []
    # The service's cap on concurrent world-model calls (128 by default, to spare providers' rate limits) is
    # lifted to what the sessions can ask at once: the bare server has none.
    config = {"max_concurrent_calls": max(counts) * CALLS_PER_SESSION}
    with bare_server() as (bare_url, bare_pid), world_model(scripted) as (model, env), \
            served(world_model=model, env=env, config=config, process_out=servers) as occusim_url, \
            ProcessPoolExecutor(processes, mp_context=multiprocessing.get_context("spawn")) as clients:
        targets = ((Target("bare", bare_url), bare_pid), (Target("occusim", occusim_url, API_KEY), servers[0].pid))
        # Warm both up first (imports on first use, caches, connection pools), and let the service finish
        # importing litellm in its background thread (tens of CPU seconds on a busy machine): the run then
        # measures the steady state.
        for target, pid in targets:
            load(clients, processes, target, 10 * processes, pid)
            asyncio.run(idle(pid))
        print(f"client processes: {processes}")
        print(f"{'sessions':>8} | {'server':<8} | {'calls/s':>8} | {'p50 ms':>7} | {'CPU ms/call':>11} | "
              f"{'client CPU':>10} | errors")
        for sessions in counts:
            figures = {}
            for target, pid in targets:
                figures[target.name] = found = load(clients, processes, target, sessions, pid)
                print(f"{sessions:>8} | {target.name:<8} | {found['calls_per_s']:>8.1f} | {found['p50_ms']:>7.0f} | "
                      f"{found['cpu_ms_per_call']:>11.2f} | {found['client_ms_per_call']:>10.2f} | "
                      f"{found['errors']:.0f}")
            bare_f, ours = figures["bare"], figures["occusim"]
            print(f"{sessions:>8} | ratio    | {ours['calls_per_s'] / bare_f['calls_per_s']:>7.2f}x | "
                  f"{ours['p50_ms'] / max(bare_f['p50_ms'], 1e-9):>6.2f}x | "
                  f"{ours['cpu_ms_per_call'] / max(bare_f['cpu_ms_per_call'], 1e-9):>10.2f}x | "
                  "targets: >= 0.9x calls/s, <= 2x CPU")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sessions", nargs="*", type=int, default=[10, 100, 500])
    parser.add_argument("--scripted", action="store_true", help="the in-process scripted world model")
    parser.add_argument("--client-processes", type=int, default=min(2, os.cpu_count() or 1), metavar="N",
                        help="client processes the sessions are spread over (default: 2, or 1 on one core)")
    args = parser.parse_args()
    main(args.sessions, args.scripted, args.client_processes)
