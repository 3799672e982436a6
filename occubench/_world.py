"""OccuBench's world model: its system prompt with prompt-injected faults, its tagged history, its retries.

Observations are the model's text between the observation tags, kept verbatim: that is what OccuBench's
agent reads, so the server returns it unchanged.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from occusim.environments import FaultSettings, Scenario, StepRecord, Usage
from occusim.llm import ModelConfig, add_usage, derived_seed
from occusim.server import SimulatorError, ask_world_model

from ._harness import HarnessPrompts
from ._verifier import occubench_action


@dataclass
class OccubenchObservation:
    """The observation text of one call, and what asking for it cost."""

    text: str
    usage: Usage = field(default_factory=Usage)
    latency_ms: float = 0.0
    attempts: int = 1


def occubench_system_prompt(prompts: HarnessPrompts, scenario: Scenario, faults: FaultSettings) -> str:
    """The environment's own prompt, OccuBench's fault rules for E1-E3, then its output-format block."""
    if scenario.simulator_prompt is None:
        raise SimulatorError(f"scenario {scenario.id!r} is not an OccuBench environment (it has no world-model "
                             "prompt of its own); --protocol occubench runs OccuBench tasks only")
    prompt = scenario.simulator_prompt
    rules = prompts.fault_prompt(faults.mode, faults.count, faults.duration)
    if rules is not None:
        prompt += prompts.fault_separator + rules
    return prompt + prompts.world_model_output_format


def step_action(step: StepRecord) -> str:
    """A recorded call as OccuBench's world model read it (a client without raw arguments gets json.dumps)."""
    raw = step.raw_arguments if step.raw_arguments is not None else json.dumps(step.arguments)
    return occubench_action(step.tool, raw)


def occubench_messages(prompts: HarnessPrompts, system: str, history: Sequence[StepRecord],
                       action: str) -> list[dict[str, str]]:
    """OccuBench's world-model request: the system prompt, every earlier call and answer, the current call."""
    messages = [{"role": "system", "content": system}]
    for step in history:
        observation = step.observation if isinstance(step.observation, str) else json.dumps(
            step.observation, ensure_ascii=False)
        messages.append({"role": "user", "content": prompts.world_model_past_action.format(action=step_action(step))})
        messages.append({"role": "assistant",
                         "content": prompts.world_model_past_observation.format(observation=observation)})
    messages.append({"role": "user", "content": prompts.world_model_action.format(tool_call_json=action)})
    return messages


async def simulate_occubench(prompts: HarnessPrompts, model: ModelConfig, messages: list[dict[str, str]],
                             *, seed: int) -> OccubenchObservation:
    """Ask until an answer parses as JSON, at most OccuBench's number of attempts; then keep the last answer.

    Provider failures are occusim's to retry (SimulatorUnavailableError once they are exhausted). `seed`
    (the episode's) only keys the cache, per attempt, since OccuBench sends none.
    """
    usage = Usage()
    latency = 0.0
    last: str | None = None
    for attempt in range(1, prompts.world_model_attempts + 1):
        completion = await ask_world_model(model, messages, attempts=attempt, usage=usage, latency_ms=latency,
                                           temperature=None, max_tokens=prompts.world_model_max_tokens,
                                           cache_seed=derived_seed(seed, "occubench-world-model", attempt))
        usage = add_usage(usage, completion.usage)
        latency += completion.latency_ms
        if not completion.text:
            continue
        text = _between_tags(prompts, completion.text)
        if not text:
            continue
        last = text
        if _parses(prompts, text):
            return OccubenchObservation(text, usage, latency, attempt)
    # OccuBench's fallback: the last answer it got, else an empty object.
    return OccubenchObservation(last if last is not None else "{}", usage, latency, prompts.world_model_attempts)


def _between_tags(prompts: HarnessPrompts, raw: str) -> str:
    match = re.search(prompts.world_model_observation_pattern, raw, re.DOTALL)
    return match.group(1).strip() if match else raw


def _parses(prompts: HarnessPrompts, text: str) -> bool:
    """JSON as is, or inside a Markdown fence: OccuBench's test of a usable observation."""
    try:
        json.loads(text)
        return True
    except ValueError:
        match = re.search(prompts.world_model_fence_pattern, text, re.DOTALL)
        if match is None:
            return False
        try:
            json.loads(match.group(1).strip())
            return True
        except ValueError:
            return False
