"""Training data from a run: one JSON line per episode, as OpenAI chat messages or ShareGPT turns."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from ._results import AuditCoverage, ResultRow, StepFlags, load_rows

ExportFormat = Literal["openai", "sharegpt"]


class ItemReward(BaseModel):
    """One rubric item's outcome; `passed` is None for an item that was not judged."""

    id: str
    kind: str
    weight: float
    passed: bool | None
    description: str = ""


class ExportMetadata(BaseModel):
    task_id: str
    scenario_id: str
    category: str
    difficulty: int
    fault_mode: str
    fault_count: int
    fault_duration: int
    faults_injected: list[str]
    trial: int
    seed: int
    agent_model: str
    world_model: str
    judge_model: str
    episode_id: str | None
    agent_ended: str | None
    passed: bool | None
    audited: AuditCoverage | None = Field(description="Which of the per-step audit's checks ran (docs/metrics.md).")
    flagged_steps: list[StepFlags] = Field(description="The steps whose simulated answer the audit flagged.")


class OpenAIExample(BaseModel):
    """OpenAI chat shape: `messages` (tool calls included), plus the tools, the reward and the verdict.

    `tools` is the OpenAI tool list as a JSON string (`json.loads` it): the parameter schemas of different
    scenarios have shapes no single columnar type holds, and `datasets` would refuse or merge them.
    """

    messages: list[dict[str, Any]]
    tools: str
    reward: float
    verdict: list[ItemReward]
    metadata: ExportMetadata


class ShareGPTTurn(BaseModel):
    from_: str = Field(alias="from", serialization_alias="from")
    value: str


class ShareGPTExample(BaseModel):
    """ShareGPT with function calling (human, gpt, function_call, observation turns; tools as a JSON string)."""

    conversations: list[ShareGPTTurn]
    system: str
    tools: str
    reward: float
    verdict: list[ItemReward]
    metadata: ExportMetadata


def _verdict(row: ResultRow) -> list[ItemReward]:
    if row.verdict is None:
        return []
    return [ItemReward(id=item.id, kind=item.kind, weight=item.weight, passed=item.passed,
                       description=item.description) for item in row.verdict.items]


def _metadata(row: ResultRow) -> ExportMetadata:
    return ExportMetadata(
        task_id=row.task_id, scenario_id=row.scenario_id, category=row.category, difficulty=row.difficulty,
        fault_mode=row.fault_mode, fault_count=row.fault_count, fault_duration=row.fault_duration,
        faults_injected=row.faults_injected, trial=row.trial, seed=row.seed, agent_model=row.agent_model,
        world_model=row.world_model, judge_model=row.judge_model, episode_id=row.episode_id,
        agent_ended=row.agent_ended, passed=row.passed, audited=row.audited, flagged_steps=row.flagged_steps,
    )


def _openai_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # Every message gets the same keys so that columnar readers see one message type.
    return [
        {
            "role": message["role"],
            "content": message.get("content"),
            "tool_calls": message.get("tool_calls"),
            "tool_call_id": message.get("tool_call_id"),
        }
        for message in messages
    ]


def openai_example(row: ResultRow) -> OpenAIExample:
    return OpenAIExample(messages=_openai_messages(row.messages), tools=json.dumps(row.tools, ensure_ascii=False),
                         reward=row.score or 0.0, verdict=_verdict(row), metadata=_metadata(row))


def sharegpt_example(row: ResultRow) -> ShareGPTExample:
    system = ""
    turns: list[ShareGPTTurn] = []
    for message in row.messages:
        role, content = message["role"], message.get("content")
        if role == "system":
            system = content or ""
        elif role == "user":
            turns.append(ShareGPTTurn(**{"from": "human", "value": content or ""}))
        elif role == "assistant" and message.get("tool_calls"):
            if content:
                turns.append(ShareGPTTurn(**{"from": "gpt", "value": content}))
            calls = [{"name": call["function"]["name"], "arguments": _arguments(call["function"]["arguments"])}
                     for call in message["tool_calls"]]
            value = calls[0] if len(calls) == 1 else calls
            turns.append(ShareGPTTurn(**{"from": "function_call", "value": json.dumps(value, ensure_ascii=False)}))
        elif role == "assistant":
            turns.append(ShareGPTTurn(**{"from": "gpt", "value": content or ""}))
        elif role == "tool":
            turns.append(ShareGPTTurn(**{"from": "observation", "value": content or ""}))
    tools = [tool["function"] for tool in row.tools]
    return ShareGPTExample(conversations=turns, system=system, tools=json.dumps(tools, ensure_ascii=False),
                           reward=row.score or 0.0, verdict=_verdict(row), metadata=_metadata(row))


def _arguments(raw: str) -> Any:
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        return raw


def export_examples(rows: list[ResultRow], format: ExportFormat, *,
                    min_score: float | None = None) -> Iterator[OpenAIExample | ShareGPTExample]:
    """Scored episodes (infra errors never), optionally only those scoring at least `min_score`."""
    for row in rows:
        if not row.scored or not row.messages:
            continue
        if min_score is not None and (row.score is None or row.score < min_score):
            continue
        yield openai_example(row) if format == "openai" else sharegpt_example(row)


def export_run(run_dir: str | Path, format: ExportFormat, *, min_score: float | None = None,
               out: str | Path | None = None) -> list[str]:
    """The JSON lines of `run_dir`'s episodes; also written to `out` when given."""
    _, rows = load_rows(run_dir)
    lines = [example.model_dump_json(by_alias=True) for example in export_examples(rows, format, min_score=min_score)]
    if out is not None:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return lines
