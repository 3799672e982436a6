"""Scripted models for the client tests: a world model replaying reference solutions, agents and judges."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from occusim.environments import Catalog, apply_json_patch, canonical_json, load_catalog
from occusim.llm import ScriptedReply, scripted_model

_STATE_BLOCK = re.compile(r"### Current state\n```json\n(.*?)\n```", re.S)
_CALL_LINE = re.compile(r"### Call \d+\n(\{.*\})")

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
        user = messages[-1]["content"]
        state = json.loads(_STATE_BLOCK.search(user).group(1))
        call = json.loads(_CALL_LINE.search(user).group(1))
        answer = self.answers.get(_key(call["name"], call["arguments"], state))
        if answer is None:
            return {"observation": {"error": f"no record matches {call['name']} {call['arguments']}"},
                    "state_patch": []}
        return answer


def tool_results(messages: list[dict]) -> list[Any]:
    return [json.loads(m["content"]) for m in messages if m["role"] == "tool"]


def task_of(messages: list[dict], catalog: Catalog) -> Any:
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
    return ScriptedReply(tool_calls=[{"id": "final", "name": "submit_result", "arguments": {"answer": answer}}])


def passing_judge(name: str | None = None) -> str:
    """A judge model passing every llm check it is shown."""

    def respond(messages: list[dict], request: dict) -> dict:
        ids = request["response_schema"]["properties"]["verdicts"]["required"]
        return {"verdicts": {check_id: {"passed": True, "reason": "fine", "evidence_steps": []} for check_id in ids}}

    return scripted_model(respond, name=name)


def transcript(task_id: str, answer: str, *, degraded: bool = False) -> list[dict[str, Any]]:
    """A short agent conversation in OpenAI chat format, as the agent runner records it."""
    observation = {"status": "open"} if degraded else {"status": "open", "amount": 89.99}
    return [
        {"role": "system", "content": "You are a Chargeback Analyst."},
        {"role": "user", "content": f"Work the dispute of {task_id}."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c0", "type": "function", "function": {"name": "get_dispute", "arguments": '{"dispute_id": "D-1"}'}}]},
        {"role": "tool", "tool_call_id": "c0", "content": json.dumps(observation)},
        {"role": "assistant", "content": "Checked.", "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "submit_result",
                                                          "arguments": json.dumps({"answer": answer})}}]},
        {"role": "tool", "tool_call_id": "c1", "content": '{"status": "submitted"}'},
    ]


TOOLS = [
    {"type": "function", "function": {"name": "get_dispute", "description": "Read a dispute.", "parameters": {
        "type": "object", "properties": {"dispute_id": {"type": "string"}}, "required": ["dispute_id"]}}},
    {"type": "function", "function": {"name": "submit_result", "description": "Finish.", "parameters": {
        "type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}}},
]


def synthetic_rows() -> list[Any]:
    """Result rows of a small run: 3 categories, E0-E3, 2 trials, one infrastructure error."""
    from occusim.clients import ResultRow
    from occusim.judge import ItemVerdict, Verdict

    rows = []
    plan = [("pharmacy/refill", "Healthcare & Life Sciences", 1), ("customs/declare", "Public Service & Governance", 2),
            ("chargeback/dispute", "Commerce & Consumer", 3)]
    for number, (task_id, category, difficulty) in enumerate(plan):
        for mode_index, mode in enumerate(("E0", "E1", "E2", "E3")):
            for trial in (0, 1):
                passed = (number + mode_index + trial) % (mode_index + 2) == 0
                infra = task_id == "customs/declare" and mode == "E3" and trial == 1
                verdict = Verdict(
                    task_id=task_id, episode_id=f"ep-{number}-{mode}-{trial}", score=1.0 if passed else 0.5,
                    passed=passed, pass_threshold=1.0, prompt_version="test", items=[
                        ItemVerdict(id="state-ok", kind="state", weight=1.0, passed=True, deterministic=True),
                        ItemVerdict(id="answer", kind="llm", weight=1.0, passed=passed, deterministic=False,
                                    description="The answer names the amount"),
                    ])
                rows.append(ResultRow(
                    task_id=task_id, scenario_id=task_id.split("/")[0], category=category, difficulty=difficulty,
                    fault_mode=mode, fault_count=2, fault_duration=2, trial=trial, seed=trial, agent_model="agent-x",
                    world_model="world-y", judge_model="judge-z", transport="inprocess",
                    status="infra_error" if infra else "ok", error="ProviderError: down" if infra else None,
                    episode_id=verdict.episode_id, score=None if infra else verdict.score,
                    passed=None if infra else passed, verdict=None if infra else verdict, steps=0 if infra else 2,
                    faults_injected=[] if mode == "E0" else ["truncate_list"], agent_ended="submitted",
                    final_answer="Accepted $89.99", messages=[] if infra else transcript(task_id, "Accepted $89.99",
                                                                                       degraded=mode != "E0"),
                    tools=TOOLS,
                ))
    return rows


def write_run(folder: Any, rows: list[Any]) -> None:
    from occusim.clients import RunConfig, RunDir

    run_dir = RunDir(folder)
    run_dir.write_config(RunConfig(agent_model="agent-x", world_model="world-y", judge_model="judge-z",
                                   faults=["E0", "E1", "E2", "E3"], trials=2))
    for row in rows:
        run_dir.append_row(row)
