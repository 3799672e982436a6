"""Scripted models that follow the bundled reference solutions: a replaying world model and agent."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from occusim.environments import SUBMIT_TOOL, Catalog, Task, apply_json_patch, canonical_json, load_catalog
from occusim.llm import ScriptedReply, scripted_model

from ._prompts import tracked_call

# Two bundled tasks with short reference solutions, in two categories.
TASK_A = "emergency-dispatcher/chest-pain-delta"
TASK_B = "chargeback-analyst/credit-not-processed-refund-settled"


def _key(tool: str, arguments: dict[str, Any], state: dict[str, Any]) -> str:
    return canonical_json([tool, arguments, state])


class ReplayWorld:
    """A world model answering each reference call with its golden observation and state patch.

    A call is matched on (tool, arguments, current state), so it is exact while the agent follows the
    reference; any other call gets an error observation and changes nothing.
    """

    def __init__(self, catalog: Catalog | None = None, name: str | None = None) -> None:
        catalog = catalog or load_catalog([])
        self.answers: dict[str, dict[str, Any]] = {}
        for task in catalog.tasks.values():
            state = catalog.initial_state(task)
            for step in task.reference_solution:
                key = _key(step.tool, step.arguments, state)
                self.answers.setdefault(key, {"observation": step.observation, "state_patch": step.state_patch})
                state = apply_json_patch(state, step.state_patch)
        self.calls = 0
        self.model = scripted_model(self, name=name)

    def __call__(self, messages: list[dict], request: dict) -> dict[str, Any]:
        self.calls += 1
        tracked = tracked_call(messages[-1]["content"])
        if tracked is None:
            raise ValueError("ReplayWorld answers tracked-mode prompts only")
        tool, arguments, state = tracked
        answer = self.answers.get(_key(tool, arguments, state))
        if answer is None:
            return {"observation": {"error": f"no record matches {tool} {arguments}"}, "state_patch": []}
        return answer


def tool_results(messages: list[dict]) -> list[Any]:
    return [json.loads(m["content"]) for m in messages if m["role"] == "tool"]


def task_of(messages: list[dict], catalog: Catalog) -> Task:
    """The catalog task whose instruction appears in the agent's first user message."""
    user = next(m["content"] for m in messages if m["role"] == "user")
    return next(t for t in catalog.tasks.values() if t.instruction.strip() in user)


class ScriptedAgent:
    """An agent model that follows the task's reference solution, one tool call per turn.

    `policy(task_id, seed)` picks its behaviour: "replay" follows the reference whatever it sees;
    "careful" gives up (submits at once) when a result differs from the golden observation; "quit"
    submits without calling any tool.
    """

    def __init__(self, policy: Callable[[str, int | None], str], catalog: Catalog | None = None,
                 name: str | None = None) -> None:
        self.catalog = catalog or load_catalog([])
        self.policy = policy
        self.requests: list[dict] = []
        self.model = scripted_model(self, name=name)

    def __call__(self, messages: list[dict], request: dict) -> ScriptedReply:
        self.requests.append(request)
        task = task_of(messages, self.catalog)
        behaviour = self.policy(task.id, request.get("seed"))
        seen = tool_results(messages)
        done = len(seen)
        if behaviour == "quit":
            return _submit("Nothing to do.")
        if behaviour == "careful" and done and seen != [s.observation for s in task.reference_solution[:done]]:
            return _submit("The systems returned inconsistent data; I stopped.")
        if done < len(task.reference_solution):
            step = task.reference_solution[done]
            return ScriptedReply(text="", tool_calls=[{"id": f"c{done}", "name": step.tool,
                                                       "arguments": step.arguments}])
        return _submit(task.final_answer or "done")


def _submit(answer: str) -> ScriptedReply:
    return ScriptedReply(tool_calls=[{"id": "final", "name": SUBMIT_TOOL, "arguments": {"answer": answer}}])
