"""A small run folder with a real store behind it, for the episode viewer: a clean pass, a faulted failure
with split judge votes, an episode full of script-injection content, and an infrastructure error."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from occusim.analysis import ResultRow, RunConfig, RunDir
from occusim.environments import (
    EpisodeRecord,
    FaultMode,
    FaultSettings,
    InjectedFault,
    StepRecord,
    Usage,
    apply_json_patch,
)
from occusim.judge import CheckVerdict, ItemVerdict, Verdict, Vote
from occusim.server import Store

# Content a browser would run if the viewer did not escape it; `window.pwned` is set only if it ran.
HOSTILE = '<script>window.pwned = 1; alert("pwned")</script><img src=x onerror="window.pwned = 2">'
CLEAN, FAULTED, HOSTILE_ID = "ep-clean-0001", "ep-fault-0002", "ep-hostile-0003"
INITIAL = {"disputes": {"D-1": {"status": "open", "amount": 89.99, "merchant": "Acme"}}}


SYSTEM_PROMPT = "You are a chargeback analyst. Use the tools, then call submit_result."
TASK_TEXT = "Refund dispute D-1 if the merchant agreed, then close it and state the amount."
AGENT_THOUGHT = "The merchant agreed, so I will close the dispute."


def _messages(steps: list[StepRecord], answer: str) -> list[dict[str, Any]]:
    """What an agent said in an episode of these steps: its text before the last call, then the submission."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT},
                                      {"role": "user", "content": TASK_TEXT}]
    for step in steps:
        said = AGENT_THOUGHT if step is steps[-1] else None
        call = {"id": f"call_{step.index}", "type": "function",
                "function": {"name": step.tool, "arguments": "{}"}}
        messages += [{"role": "assistant", "content": said, "tool_calls": [call]},
                     {"role": "tool", "tool_call_id": f"call_{step.index}", "content": "{}"}]
    submit = {"id": "call_submit", "type": "function", "function": {"name": "submit_result", "arguments": "{}"}}
    return [*messages, {"role": "assistant", "content": f"Done: {answer}", "tool_calls": [submit]}]


@dataclass(frozen=True)
class ViewedRun:
    folder: Path
    db: Path


def _step(index: int, tool: str, arguments: dict[str, object], observation: object, **extra: object) -> StepRecord:
    return StepRecord.model_validate({
        "index": index, "tool": tool, "arguments": arguments, "observation": observation,
        "usage": Usage(prompt_tokens=400 + index, completion_tokens=60, calls=1), "latency_ms": 850.0 + index,
        **extra,
    })


def _verdict(task_id: str, episode_id: str, passed: bool, reason: str) -> Verdict:
    votes = [Vote(vote=0, passed=True, reason="The amount is named."),
             Vote(vote=1, passed=passed, reason=reason, evidence_steps=[1]),
             Vote(vote=2, passed=passed, reason="Agrees with vote 1.")]
    return Verdict(
        task_id=task_id, episode_id=episode_id, score=1.0 if passed else 0.5, passed=passed, pass_threshold=1.0,
        prompt_version="test", judge_model="judge-z", votes=3, items=[
            ItemVerdict(id="state-closed", kind="state", weight=1.0, passed=True, deterministic=True,
                        description="The dispute is closed",
                        checks=[CheckVerdict(index=0, id="state-closed#0", description="disputes/D-1/status is closed",
                                             passed=True, reason="closed")]),
            ItemVerdict(id="answer", kind="llm", weight=1.0, passed=passed, deterministic=False,
                        description="The answer names the refunded amount",
                        checks=[CheckVerdict(index=0, id="answer#0", description="names $89.99", passed=passed,
                                             reason=reason, evidence_steps=[1], votes=votes)]),
        ],
    )


async def write_viewed_run(folder: Path, store: Store | None = None) -> ViewedRun:
    """Write run.json, results.jsonl and episodes.db (a real SQLite store) under `folder`; the episodes go to
    `store` instead when one is given (opened by the caller)."""
    run_dir = RunDir(folder)
    run_dir.write_config(RunConfig(agent_model="agent-x", world_model="world-y", judge_model="judge-z",
                                   faults=["E0", "E2"]))
    closing = [{"op": "replace", "path": "/disputes/D-1/status", "value": "closed"}]
    dispute = INITIAL["disputes"]["D-1"]
    started = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
    episodes: list[tuple[str, str, FaultMode, bool, str, str, list[StepRecord]]] = [
        (CLEAN, "chargeback/dispute", "E0", True, "All votes agree.", "Refunded $89.99", [
            _step(0, "get_dispute", {"dispute_id": "D-1"}, dispute),
            _step(1, "close_dispute", {"dispute_id": "D-1"}, {"status": "closed"}, state_patch=closing),
        ]),
        (FAULTED, "chargeback/dispute", "E2", False, "The amount was never stated.", "Refunded the customer", [
            _step(0, "get_dispute", {"dispute_id": "D-1"}, {"status": "open", "merchant": "Acme"},
                  true_observation=dispute,
                  fault=InjectedFault(kind="implicit", label="drop_fields", detail="dropped: amount")),
            _step(1, "close_dispute", {"dispute_id": "D-1"}, {"status": "closed"}, state_patch=closing),
        ]),
        (HOSTILE_ID, "pharmacy/refill", "E2", False, HOSTILE, HOSTILE, [
            _step(0, "lookup", {"query": HOSTILE}, {"note": HOSTILE, HOSTILE: [HOSTILE]},
                  true_observation={"note": "fine", HOSTILE: [HOSTILE]},
                  fault=InjectedFault(kind="implicit", label="stale", detail=HOSTILE), error=HOSTILE),
        ]),
    ]
    async with contextlib.AsyncExitStack() as stack:
        if store is None:
            store = await stack.enter_async_context(Store(folder / "episodes.db"))
        for number, (episode_id, task_id, mode, passed, reason, answer, steps) in enumerate(episodes):
            scenario_id = task_id.split("/")[0]
            when = started + timedelta(minutes=number)
            await store.create_episode(EpisodeRecord(
                id=episode_id, task_id=task_id, scenario_id=scenario_id, world_model="world-y",
                faults=FaultSettings(mode=mode, seed=number), initial_state=INITIAL, state=INITIAL, created_at=when,
            ))
            state: Any = INITIAL
            for step in steps:
                state = apply_json_patch(state, step.state_patch)
                await store.append_step(episode_id, step.model_copy(update={"created_at": when}), state)
            await store.close_episode(episode_id, status="submitted", final_answer=answer, closed_at=when)
            verdict = _verdict(task_id, episode_id, passed, reason)
            await store.save_judgment(episode_id, verdict)
            run_dir.append_row(ResultRow(
                task_id=task_id, scenario_id=scenario_id,
                category="Commerce & Consumer" if scenario_id == "chargeback" else "Healthcare & Life Sciences",
                difficulty=1, fault_mode=mode, fault_count=2, fault_duration=2, trial=0, seed=number,
                agent_model="agent-x", world_model="world-y", judge_model="judge-z", transport="inprocess",
                status="ok", episode_id=episode_id, score=verdict.score, passed=passed, verdict=verdict,
                steps=len(steps), faults_injected=[step.fault.label for step in steps if step.fault],
                faults_planned=0 if mode == "E0" else 2, faults_met=sum(1 for step in steps if step.fault),
                final_answer=answer, duration_s=3.5 + number, messages=_messages(steps, answer),
                usage={"agent": Usage(prompt_tokens=2000, completion_tokens=300, calls=3),
                       "world_model": Usage(prompt_tokens=800, completion_tokens=120, calls=2)},
            ))
    run_dir.append_row(ResultRow(
        task_id="pharmacy/refill", scenario_id="pharmacy", category="Healthcare & Life Sciences", difficulty=1,
        fault_mode="E0", fault_count=2, fault_duration=2, trial=1, seed=1, agent_model="agent-x",
        world_model="world-y", judge_model="judge-z", transport="inprocess", status="infra_error",
        error="ProviderError: down",
    ))
    return ViewedRun(folder=folder, db=folder / "episodes.db")
