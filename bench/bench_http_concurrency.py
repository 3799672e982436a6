"""200 episodes at once over HTTP: each created through the API, driven by its own SDK client (half in the
2026-07-28 mode, half with legacy sessions) and submitted. Counts errors and lost steps; both must be 0."""

from __future__ import annotations

import asyncio
import time

import httpx
import httpx2
from _served import API_KEY, TASK, percentile, served
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from occusim.environments import SUBMIT_TOOL

EPISODES = 200
CALLS = [
    ("list_patients", {}),
    ("get_patient", {"patient_id": "P2"}),
    ("set_priority", {"patient_id": "P1", "priority": 1}),
    ("get_patient", {"patient_id": "P1"}),
]


Outcome = tuple[str, int, list[str], float]


async def drive(url: str, rest: httpx.AsyncClient, number: int, start: asyncio.Event) -> Outcome:
    """One agent: create an episode, make the calls, submit.

    Returns the episode id, the calls answered, the errors and the seconds from the start signal to submit.
    """
    errors: list[str] = []
    answered = 0
    created = await rest.post(f"{url}/v1/episodes", json={"task_id": TASK})
    if created.status_code != 201:
        return "", 0, [f"create: {created.status_code} {created.text}"], 0.0
    episode = created.json()
    await start.wait()
    began = time.perf_counter()
    mode = "auto" if number % 2 else "legacy"
    try:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {episode['token']}"}, timeout=300) as http:
            async with Client(streamable_http_client(episode["mcp_url"], http_client=http), mode=mode) as client:
                await client.list_tools()
                for tool, arguments in CALLS:
                    result = await client.call_tool(tool, arguments)
                    answered += 1
                    if result.is_error:
                        errors.append(f"{tool}: {result.content[0].text}")
                submitted = await client.call_tool(SUBMIT_TOOL, {"answer": "P1 set to priority 1"})
                if submitted.is_error:
                    errors.append(f"submit: {submitted.content[0].text}")
    except Exception as error:  # counted, not raised: the run reports every failure
        errors.append(f"{mode} client: {type(error).__name__}: {error}")
    return episode["episode_id"], answered, errors, time.perf_counter() - began


async def run(url: str) -> None:
    limits = httpx.Limits(max_connections=EPISODES)
    async with httpx.AsyncClient(headers={"Authorization": f"Bearer {API_KEY}"}, timeout=300, limits=limits) as rest:
        start = asyncio.Event()
        agents = [asyncio.create_task(drive(url, rest, number, start)) for number in range(EPISODES)]
        await asyncio.sleep(0)
        began = time.perf_counter()
        start.set()
        outcomes = await asyncio.gather(*agents)
        elapsed = time.perf_counter() - began

        errors = [error for _, _, found, _ in outcomes for error in found]
        lost = 0
        statuses: dict[str, int] = {}
        for episode_id, answered, _, _ in outcomes:
            if not episode_id:
                continue
            view = (await rest.get(f"{url}/v1/episodes/{episode_id}")).json()
            statuses[view["status"]] = statuses.get(view["status"], 0) + 1
            lost += max(0, answered - view["step_count"])
    calls = sum(answered + 1 for _, answered, _, _ in outcomes)
    durations = [seconds for episode_id, _, _, seconds in outcomes if episode_id]
    print(f"bench_http_concurrency: {EPISODES} concurrent episodes x {len(CALLS)} calls + submit, scripted world model")
    print(f"  {calls} tool calls in {elapsed:.1f} s ({calls / elapsed:.0f} calls/s); statuses {statuses}")
    print(f"  per episode: p50 {percentile(durations, 0.5):.1f} s, p99 {percentile(durations, 0.99):.1f} s")
    print(f"  errors {len(errors)} (must be 0); lost steps {lost} (must be 0)")
    for error in errors[:5]:
        print(f"    {error[:200]}")


def main() -> None:
    with served(max_steps=len(CALLS) + 1) as url:
        asyncio.run(run(url))


if __name__ == "__main__":
    main()
