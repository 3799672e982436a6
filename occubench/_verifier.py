"""OccuBench's verifier: its prompt and trajectory text, k plain votes, an unreadable vote counted as False."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Sequence
from typing import Any

from occusim.environments import EpisodeRecord, Task, Usage
from occusim.judge import (
    VERIFICATION_PLAN_ID,
    ItemVerdict,
    JudgedCheck,
    JudgeModelError,
    Verdict,
    Vote,
    tally,
)
from occusim.llm import LLMError, LLMOutputError, ModelConfig, RetryPolicy, complete, derived_seed, sum_usage

from ._harness import HarnessPrompts

# OccuBench's harness sends each request through an OpenAI client with its default of 2 retries.
HARNESS_ATTEMPTS = 3
# The reason of a vote whose provider failed, counted False under --outage-policy harness.
OUTAGE_VOTE = "verifier outage: the provider failed (counted as False, as OccuBench's harness does)"


def occubench_action(tool: str, raw_arguments: str) -> str:
    """One tool call as OccuBench's world model reads it: the name and the agent's own argument string."""
    return json.dumps({"name": tool, "arguments": raw_arguments}, ensure_ascii=False)


def trajectory_from_messages(prompts: HarnessPrompts, messages: Sequence[dict[str, Any]]) -> str:
    """The verifier's trajectory from an agent's OpenAI-format conversation, as OccuBench's agent logs it."""
    parts: list[str] = []
    index = 0
    while index < len(messages):
        message = messages[index]
        index += 1
        if message.get("role") != "assistant":
            continue
        if message.get("content"):
            parts.append(prompts.trajectory_response.format(content=message["content"]))
        for call in message.get("tool_calls") or []:
            name, arguments = call["function"]["name"], call["function"]["arguments"]
            parts.append(prompts.trajectory_action.format(tool_name=name, tool_args=arguments))
            observation = ""
            if index < len(messages) and messages[index].get("role") == "tool":
                observation = messages[index].get("content") or ""
                index += 1
            parts.append(prompts.trajectory_observation.format(tool_name=name, observation=observation))
    return "".join(parts)


def trajectory_from_record(prompts: HarnessPrompts, record: EpisodeRecord) -> str:
    """The trajectory of an episode recorded over MCP: every call and what it returned, then the answer.

    The agent's intermediate replies never reach an MCP server, so only the submitted answer is shown.
    """
    parts: list[str] = []
    for step in record.steps:
        arguments = step.raw_arguments if step.raw_arguments is not None else json.dumps(step.arguments)
        observation = step.observation if isinstance(step.observation, str) else json.dumps(
            step.observation, ensure_ascii=False)
        parts.append(prompts.trajectory_action.format(tool_name=step.tool, tool_args=arguments))
        parts.append(prompts.trajectory_observation.format(tool_name=step.tool, observation=observation))
    if record.final_answer:
        parts.append(prompts.trajectory_response.format(content=record.final_answer))
    return "".join(parts)


def verifier_inputs(config: dict[str, Any]) -> tuple[str, Any]:
    """The initial state and state description of an environment config, as OccuBench's driver passes them."""
    initial_state = config.get("task_initial_state", "{}")
    if isinstance(initial_state, dict):
        initial_state = json.dumps(initial_state, ensure_ascii=False)
    return initial_state, config.get("state_description", "")


async def verify_occubench(prompts: HarnessPrompts, task: Task, config: dict[str, Any], trajectory: str, *,
                           record_id: str | None, model: ModelConfig, seed: int = 0,
                           outages_fail: bool = False) -> Verdict:
    """Judge one trajectory the way OccuBench's verifier does: `verifier_votes` requests of one user message.

    A vote passes when its first `{...}` parses and says `is_correct`; anything else (no answer, no JSON)
    is a False vote, kept as an abstention. The task passes on a strict majority of True votes. A
    provider failure raises JudgeModelError (occusim retries episodes), unless `outages_fail`: then each
    request is tried as often as OccuBench's client tries it, and a vote whose provider still fails is a
    False vote, as OccuBench counts it (its reason says so).
    """
    initial_state, state_description = verifier_inputs(config)
    prompt = prompts.verifier_prompt(
        scenario_name=task.title, initial_state=initial_state, state_description=state_description,
        instruction=task.instruction, verification_plan=task.verification_plan or "", trajectory=trajectory,
    )
    messages = [{"role": "user", "content": prompt}]

    async def one_vote(vote: int) -> tuple[Vote, Usage]:
        try:
            # No seed is sent (OccuBench sends none); the derived one keys the cache, so that each vote is
            # its own sample and a re-run of the trial is served its own votes again.
            completion = await complete(model, messages, temperature=None, max_tokens=prompts.verifier_max_tokens,
                                        role="judge", cache_seed=derived_seed(seed, "occubench-verifier", vote),
                                        retry=RetryPolicy(attempts=HARNESS_ATTEMPTS) if outages_fail else None)
        except LLMError as error:
            if outages_fail and not isinstance(error, LLMOutputError):
                return Vote(vote=vote, passed=False, reason=OUTAGE_VOTE), Usage()
            raise JudgeModelError(f"the verifier model {model.model!r} failed on task {task.id!r} "
                                  f"(vote {vote + 1} of {prompts.verifier_votes}): {error}") from error
        return _read_vote(prompts, completion.text, vote), completion.usage

    results = await asyncio.gather(*(one_vote(vote) for vote in range(prompts.verifier_votes)))
    votes = [vote for vote, _ in results]
    # The native judge's count with OccuBench's rule for unreadable votes: a strict majority of True votes.
    plan = JudgedCheck(id=f"{VERIFICATION_PLAN_ID}#0", item_id=VERIFICATION_PLAN_ID, index=0,
                       text=task.verification_plan or "", item_description="OccuBench verifier")
    check = tally(plan, votes, on_no_usable_vote="fail")
    passed = bool(check.passed)
    item = ItemVerdict(id=VERIFICATION_PLAN_ID, kind="llm", weight=1.0, description=plan.item_description,
                       passed=passed, checks=[check], deterministic=False)
    return Verdict(
        task_id=task.id, episode_id=record_id, score=1.0 if passed else 0.0, passed=passed, pass_threshold=1.0,
        items=[item], judge_model=model.model, prompt_version=verifier_version(prompts), votes=len(votes),
        seed=seed, abstentions=check.abstentions, ties=[check.id] if check.tie else [],
        usage=sum_usage(usage for _, usage in results),
    )


def verifier_version(prompts: HarnessPrompts) -> str:
    """The verdict's prompt version: OccuBench's verifier file, by the first 12 hex digits of its hash."""
    return f"occubench-verifier-{prompts.files.get('verifier.py', '')[:12]}"


def _read_vote(prompts: HarnessPrompts, text: str, vote: int) -> Vote:
    match = re.search(prompts.verifier_json_pattern, text or "", re.DOTALL)
    if match is not None:
        try:
            result = json.loads(match.group())
        except ValueError:
            result = None
        if isinstance(result, dict):
            return Vote(vote=vote, passed=bool(result.get("is_correct", False)),
                        reason=str(result.get("feedback", "")))
    # OccuBench's rule: an unreadable vote is a False vote. It is kept as an abstention so it is counted.
    return Vote(vote=vote, passed=None, reason="abstained: no readable verdict (counted as False)")
