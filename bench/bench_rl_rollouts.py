"""Concurrent RL rollouts through the OpenEnv adapter, side by side with `occusim run` on the same tasks: the
OccuBench tasks under `--protocol occubench`, E0, response cache off, against one fake OpenAI-compatible
endpoint (bench/_fake_openai.py, its own process) that answers every call after a fixed latency.

The rollouts play over `occusim serve --openenv`'s WebSocket /ws, one connection each: reset, then the policy
(the endpoint's fake-agent, asked by this process) picks a tool call, /ws runs it on the world model, ..., and
`submit_result` ends the episode, judged before the reward comes back. Each episode makes --tool-calls tool
calls, so it cannot take less than (2N+2) x latency (the latency bound), on either side. For each concurrency
it prints episodes per hour and the share of the bound reached for both, and the ratio OpenEnv / run.

    python bench/bench_rl_rollouts.py                       # concurrency 256
    python bench/bench_rl_rollouts.py --concurrency 16,256 --latency 0.5 --tool-calls 16
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _checkout  # noqa: F401
import aiohttp
import httpx
from bench_vs_occubench import (
    KEY,
    finished_rows,
    latency_bound,
    measured,
    occubench_world_tags,
    occusim_command,
    occusim_env,
    sample_copy,
)
from websockets.asyncio.client import connect

from occusim.environments import load_catalog
from tests.helpers import free_port


def serve_command(sample: Path, port: int, concurrency: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "occusim",
        "serve",
        "--openenv",
        "--protocol",
        "occubench",
        "--source",
        f"occubench:{sample}",
        "--no-bundled",
        "--world-model",
        "openai/fake-world",
        "--judge-model",
        "openai/fake-verifier",
        "--no-cache",
        "--port",
        str(port),
        "--max-concurrent-calls",
        str(concurrency),
        "--log-level",
        "warning",
    ]


async def rollout(base: str, task_id: str, policy: Policy) -> float | None:
    """One episode over /ws, the fake agent choosing each call; its reward."""
    async with connect(base.replace("http", "ws") + "/ws", max_size=None, open_timeout=120) as ws:
        reset = await _exchange(ws, {"type": "reset", "data": {"task_id": task_id}})
        observation = reset["observation"]
        tools = [
            {
                "type": "function",
                "function": {
                    "name": tool["name"],
                    "description": tool["description"],
                    "parameters": tool["input_schema"],
                },
            }
            for tool in observation["tools"]
            if tool["name"] != "submit_result"
        ]
        messages: list[dict[str, Any]] = [{"role": "user", "content": observation["prompt"]}]
        while True:
            message = await policy.choose(messages, tools)
            messages.append(message)
            if not message.get("tool_calls"):
                done = await _exchange(ws, _call("submit_result", {"answer": message.get("content") or ""}))
                assert done["done"], done
                reward: float | None = done["reward"]
                return reward
            for call in message["tool_calls"]:
                result = await _exchange(
                    ws, _call(call["function"]["name"], json.loads(call["function"]["arguments"]))
                )
                messages.append(
                    {"role": "tool", "tool_call_id": call["id"], "content": result["observation"]["result"]}
                )


def _call(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "step", "data": {"type": "call_tool", "tool_name": tool, "arguments": arguments}}


async def _exchange(ws: Any, frame: dict[str, Any]) -> dict[str, Any]:
    await ws.send(json.dumps(frame))
    answer = json.loads(await ws.recv())
    if answer["type"] != "observation":
        raise RuntimeError(f"the server answered {answer}")
    data: dict[str, Any] = answer["data"]
    return data


class Policy:
    """The policy under training, as the endpoint's fake-agent plays it (aiohttp, as occusim's own lean path)."""

    def __init__(self, url: str, session: aiohttp.ClientSession) -> None:
        self.url, self.session = f"{url}/chat/completions", session

    async def choose(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        body = {"model": "fake-agent", "messages": messages, "tools": tools}
        async with self.session.post(
            self.url, json=body, headers={"Authorization": f"Bearer {KEY}"}
        ) as answer:
            message: dict[str, Any] = (await answer.json())["choices"][0]["message"]
            return message


async def rollouts(base: str, url: str, tasks: list[str], concurrency: int) -> tuple[int, float]:
    """All tasks' rollouts, `concurrency` at a time: (episodes rewarded, wall seconds)."""
    gate = asyncio.Semaphore(concurrency)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
        policy = Policy(url, session)

        async def one(task_id: str) -> float | None:
            async with gate:
                return await rollout(base, task_id, policy)

        started = time.perf_counter()
        rewards = await asyncio.gather(*(one(task_id) for task_id in tasks))
        return sum(1 for reward in rewards if reward is not None), time.perf_counter() - started


def openenv_side(sample: Path, url: str, concurrency: int, folder: Path) -> tuple[int, float]:
    port = free_port()
    env = {**occusim_env(url, "lean"), "XDG_DATA_HOME": str(folder / "data")}
    log = folder / f"openenv-{concurrency}.log"
    server = subprocess.Popen(
        [*serve_command(sample, port, concurrency), "--db", str(folder / f"openenv-{concurrency}.db")],
        env=env,
        cwd=folder,
        stderr=log.open("w"),
    )
    base = f"http://127.0.0.1:{port}"
    try:
        _wait(base, server, log)
        tasks = [task.id for task in load_catalog([f"occubench:{sample}"], bundled=False).select()]
        try:
            before, driver_before = _cpu_seconds(server.pid), time.process_time()
            played = asyncio.run(rollouts(base, url, tasks, concurrency))
            server_ms = (_cpu_seconds(server.pid) - before) / len(tasks) * 1000
            driver_ms = (time.process_time() - driver_before) / len(tasks) * 1000
            print(
                f"OpenEnv CPU per episode: server {server_ms:.1f} ms, rollout driver (the policy's side) "
                f"{driver_ms:.1f} ms",
                flush=True,
            )
            return played
        except Exception as error:
            raise SystemExit(
                f"the rollouts failed: {error!r}; the server's log ends:\n{log.read_text()[-3000:]}"
            ) from None
    finally:
        server.terminate()
        server.wait(timeout=60)


def _cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of a running process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _wait(base: str, server: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"occusim serve --openenv exited:\n{log.read_text()[-3000:]}")
        try:
            if httpx.get(f"{base}/health").status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise SystemExit("occusim serve --openenv did not start within 120 s")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--concurrency", default="256", help="comma-separated (default 256)")
    parser.add_argument("--latency", type=float, default=0.5, help="seconds per answer (default 0.5)")
    parser.add_argument("--tool-calls", type=int, default=16, help="tool calls per episode (default 16)")
    args = parser.parse_args()
    found = occubench_world_tags("bench_rl_rollouts")
    if found is None:
        return 0
    sample, opening, closing = found
    bound = latency_bound(args.tool_calls, args.latency)
    with tempfile.TemporaryDirectory(prefix="bench-rl-rollouts-") as name:
        folder = Path(name)
        endpoint = subprocess.Popen(
            [
                sys.executable,
                str(Path(__file__).with_name("_fake_openai.py")),
                "--latency",
                str(args.latency),
                "--tool-calls",
                str(args.tool_calls),
                "--tags",
                opening,
                closing,
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert endpoint.stdout is not None
            url = endpoint.stdout.readline().strip()
            for concurrency in (int(c) for c in args.concurrency.split(",")):
                episodes = max(64, concurrency)
                copy = sample_copy(folder, episodes)
                ideal = min(concurrency, episodes) / bound * 3600.0
                out = folder / f"run-{concurrency}"
                wall, _, code = measured(
                    occusim_command(copy, concurrency, out),
                    occusim_env(url, "lean"),
                    folder,
                    folder / f"run-{concurrency}.log",
                )
                if code != 0:
                    raise SystemExit(
                        f"occusim run exited with {code}:\n{(folder / f'run-{concurrency}.log').read_text()[-3000:]}"
                    )
                run_done = finished_rows(out, "occusim")
                rewarded, openenv_wall = openenv_side(copy, url, concurrency, folder)
                run_rate, openenv_rate = run_done / wall * 3600.0, rewarded / openenv_wall * 3600.0
                print(
                    f"occusim run        c={concurrency:<4} {run_done}/{episodes} episodes in {wall:6.1f} s: "
                    f"{run_rate:8,.0f} episodes/h = {run_rate / ideal:5.1%} of the latency bound ({ideal:,.0f}/h)"
                )
                print(
                    f"OpenEnv rollouts   c={concurrency:<4} {rewarded}/{episodes} rewarded in {openenv_wall:6.1f} s: "
                    f"{openenv_rate:8,.0f} episodes/h = {openenv_rate / ideal:5.1%} of the latency bound"
                )
                print(
                    f"ratio OpenEnv / run c={concurrency:<4} episodes/h {openenv_rate / run_rate:5.2f}x",
                    flush=True,
                )
        finally:
            endpoint.terminate()
            endpoint.wait()
    return 0


if __name__ == "__main__":
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    sys.exit(main())
