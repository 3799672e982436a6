"""A synthetic batch run (result rows and transcripts) for the export, metrics and report code."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from occusim.analysis import ResultRow, RunConfig, RunDir, StepFlags
from occusim.environments import SUBMIT_TOOL, FaultMode, FlagKind, StepFlag
from occusim.judge import ItemVerdict, Verdict

TOOLS = [
    {"type": "function", "function": {"name": "get_dispute", "description": "Read a dispute.", "parameters": {
        "type": "object", "properties": {"dispute_id": {"type": "string"}}, "required": ["dispute_id"]}}},
    {"type": "function", "function": {"name": SUBMIT_TOOL, "description": "Finish.", "parameters": {
        "type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}}},
]


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
            {"id": "c1", "type": "function", "function": {"name": SUBMIT_TOOL,
                                                          "arguments": json.dumps({"answer": answer})}}]},
        {"role": "tool", "tool_call_id": "c1", "content": '{"status": "submitted"}'},
    ]


MODES: tuple[FaultMode, ...] = ("E0", "E1", "E2", "E3")


def synthetic_rows() -> list[ResultRow]:
    """Result rows of a small run: 3 categories, E0-E3, 2 trials, one infrastructure error."""
    rows = []
    plan = [("pharmacy/refill", "Healthcare & Life Sciences", 1), ("customs/declare", "Public Service & Governance", 2),
            ("chargeback/dispute", "Commerce & Consumer", 3)]
    for number, (task_id, category, difficulty) in enumerate(plan):
        for mode_index, mode in enumerate(MODES):
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
                    tools=TOOLS, audited="state",
                    flagged_steps=[] if infra or number != 1 or trial else [StepFlags(step=1, tool="get_order", flags=[
                        StepFlag(kind=FlagKind.fabricated_entity, path="/order_id",
                                 detail="the id 'ORD-9' appears nowhere in the state, the call or earlier observations"),
                    ])],
                ))
    return rows


def write_run(folder: Path, rows: list[ResultRow]) -> None:
    run_dir = RunDir(folder)
    run_dir.write_config(RunConfig(agent_model="agent-x", world_model="world-y", judge_model="judge-z",
                                   faults=list(MODES), trials=2))
    for row in rows:
        run_dir.append_row(row)
