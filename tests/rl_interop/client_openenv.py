"""Rollouts of occusim episodes with OpenEnv's own `GenericEnvClient`, run by the framework's virtualenv python.

Argument: the server's base URL and a JSON list of rollouts, each `{"reset": {...}, "priority": N}`: reset with
those arguments, list the tools, set P1's priority, call a tool that does not exist, submit. The last line of
stdout is a JSON report of what the client saw, one entry per rollout, played concurrently (async client).
"""

from __future__ import annotations

import asyncio
import json
import sys
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from openenv.core.env_server.mcp_types import CallToolAction, ListToolsAction
from openenv.core.generic_client import GenericEnvClient


def distribution() -> str:
    for name in ("openenv", "openenv-core"):
        try:
            return f"{name} {version(name)}"
        except PackageNotFoundError:
            continue
    return "unknown"


async def rollout(base_url: str, plan: dict[str, Any]) -> dict[str, Any]:
    async with GenericEnvClient(base_url=base_url) as env:
        reset = await env.reset(**plan["reset"])
        listed = await env.step(ListToolsAction())
        called = await env.step(
            CallToolAction(
                tool_name="set_priority", arguments={"patient_id": "P1", "priority": plan["priority"]}
            )
        )
        unknown = await env.step(CallToolAction(tool_name="teleport", arguments={}))
        submitted = await env.step(
            CallToolAction(
                tool_name="submit_result", arguments={"answer": f"P1 is priority {plan['priority']}"}
            )
        )
        state = await env.state()
    return {
        "episode_id": reset.observation["episode_id"],
        "task_id": reset.observation["task_id"],
        "reset_done": reset.done,
        "tools": [tool["name"] for tool in listed.observation["tools"]],
        "called": json.loads(called.observation["result"]),
        "called_reward": called.reward,
        "unknown_is_error": unknown.observation["is_error"],
        "done": submitted.done,
        "reward": submitted.reward,
        "state": state,
    }


async def main() -> None:
    base_url, plans = sys.argv[1], json.loads(sys.argv[2])
    rollouts = await asyncio.gather(*(rollout(base_url, plan) for plan in plans))
    print(json.dumps({"client": distribution(), "rollouts": rollouts}))


if __name__ == "__main__":
    asyncio.run(main())
