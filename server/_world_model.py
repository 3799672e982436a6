"""The world model: one tool call in, a validated observation and state patch out, repaired when wrong."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from occusim.environments import (
    FlagKind,
    PatchError,
    Scenario,
    SimulationMode,
    StepFlag,
    StepRecord,
    Tool,
    Usage,
    apply_json_patch,
    json_problems,
    reports_error,
)
from occusim.llm import Completion, LLMError, LLMOutputError, ModelConfig, ProviderError, add_usage, complete

from . import _simulator_prompt as prompts
from ._audit import audit_step
from ._errors import SimulatorError, SimulatorUnavailableError
from ._limits import LoopSemaphore
from ._schemas import violations

_MAX_PROBLEMS = 8
# What tracked mode refuses (the answer goes back for repair): the flags the state and the tool's
# declarations make certain. The audit's other flags are only recorded.
ENFORCED_FLAGS = frozenset({FlagKind.read_only_change, FlagKind.out_of_bounds_write, FlagKind.created_id_mismatch,
                            FlagKind.wrong_record, FlagKind.unrecorded_write, FlagKind.error_contradiction})
# Deeper than any argument the agent may send (64 by default), so echoing one back is never refused.
_MAX_REPLY_DEPTH = 120
DEFAULT_CALL_DEADLINE = 120.0

log = logging.getLogger("occusim.server")


@dataclass
class Simulation:
    """A validated answer of the world model for one call."""

    observation: dict[str, Any]
    patch: list[dict[str, Any]]
    state: dict[str, Any]
    usage: Usage = field(default_factory=Usage)
    latency_ms: float = 0.0
    attempts: int = 1
    flags: list[StepFlag] = field(default_factory=list)


class WorldModel:
    """Simulates tool calls with a language model, keeping the tracked state consistent.

    In `tracked` mode the prompt carries the authoritative state and the last `history_window` calls, and
    the model answers `{"observation", "state_patch"}`; the observation must satisfy the tool's output
    schema (or be an `{"error": ...}` object), the patch must apply, and the new state must satisfy the
    scenario's state schema. In `history` mode the prompt is the full action/observation conversation and
    the model answers the observation alone; the state does not change. A rejected answer is sent back
    with the exact problems, up to `max_repairs` times; then `simulate` raises SimulatorError. A provider
    that stays unreachable or malformed after the gateway's retries, or a call that runs past `deadline`
    seconds (every request, retry and repair together), raises SimulatorUnavailableError. Its message
    names only the HTTP status and error type; the provider's own text goes to the operator's log.
    With `admission`, a call waits for one of its slots before any model request (the deadline starts
    once it has one), so a saturated service queues calls instead of failing them.
    """

    def __init__(self, model: ModelConfig | str, *, history_window: int = 6, max_repairs: int = 2,
                 temperature: float = 0.0, seed: int | None = None, max_tokens: int | None = None,
                 deadline: float = DEFAULT_CALL_DEADLINE, admission: LoopSemaphore | None = None) -> None:
        self.model = model if isinstance(model, ModelConfig) else ModelConfig(model=model)
        self.history_window = history_window
        self.max_repairs = max_repairs
        self.temperature = temperature
        self.seed = seed
        self.max_tokens = max_tokens
        self.deadline = deadline
        self.admission = admission
        self._system_prompts: dict[tuple[int, str | None], tuple[Scenario, str]] = {}

    @property
    def name(self) -> str:
        return self.model.model

    def messages(self, scenario: Scenario, tool: Tool, arguments: dict[str, Any], *, state: dict[str, Any],
                 history: Sequence[StepRecord], mode: SimulationMode = "tracked",
                 initial_state: dict[str, Any] | None = None, fault_rules: str | None = None) -> list[dict[str, str]]:
        """The prompt for one call; `history` is every earlier step of the episode."""
        simulated = prompts.simulated_steps(history)
        if mode == "history":
            return prompts.history_messages(
                scenario, initial_state if initial_state is not None else state, tool.name, arguments, simulated,
                fault_rules,
            )
        user = prompts.tracked_user_message(
            tool, arguments, state, simulated, window=self.history_window, call_number=len(history) + 1
        )
        return [{"role": "system", "content": self._tracked_system(scenario, fault_rules)},
                {"role": "user", "content": user}]

    def _tracked_system(self, scenario: Scenario, fault_rules: str | None) -> str:
        key = (id(scenario), fault_rules)
        cached = self._system_prompts.get(key)
        if cached is None or cached[0] is not scenario:
            cached = (scenario, prompts.tracked_system_prompt(scenario, fault_rules))
            self._system_prompts[key] = cached
        return cached[1]

    @contextlib.asynccontextmanager
    async def bounded(self, tool: str) -> AsyncIterator[CallTally]:
        """One tool call's world-model work: first an admission slot, then at most `deadline` seconds.

        Past the deadline the work is cancelled and SimulatorUnavailableError raised, with what the
        tally yielded here recorded as spent.
        """
        tally = CallTally(deadline=self.deadline)
        admitted = self.admission.hold() if self.admission is not None else contextlib.nullcontext()
        try:
            async with admitted:
                tally.started = time.monotonic()
                async with asyncio.timeout(self.deadline):
                    yield tally
        except TimeoutError:
            log.warning("world model %s: the call of %r ran past its deadline of %g s", self.name, tool,
                        self.deadline)
            raise SimulatorUnavailableError(
                f"the world model did not answer within {self.deadline:g} s; the call had no effect, retry it later",
                attempts=tally.attempts, usage=tally.usage, latency_ms=tally.latency_ms,
            ) from None

    async def simulate(self, scenario: Scenario, tool: Tool, arguments: dict[str, Any], *, state: dict[str, Any],
                       history: Sequence[StepRecord], mode: SimulationMode = "tracked",
                       initial_state: dict[str, Any] | None = None, fault_rules: str | None = None,
                       seed: int | None = None) -> Simulation:
        """Ask the model for this call's observation (and patch), validating and repairing its answer.

        `seed` (the episode's) is sent with every request instead of the model's own, so that each trial
        of a task is its own sample and its own cache entry.
        """
        async with self.bounded(tool.name) as tally:
            return await self._simulate(scenario, tool, arguments, state=state, history=history, mode=mode,
                                        initial_state=initial_state, fault_rules=fault_rules, seed=seed,
                                        tally=tally)

    async def _simulate(self, scenario: Scenario, tool: Tool, arguments: dict[str, Any], *, state: dict[str, Any],
                        history: Sequence[StepRecord], mode: SimulationMode, initial_state: dict[str, Any] | None,
                        fault_rules: str | None, seed: int | None, tally: CallTally) -> Simulation:
        tracked = mode == "tracked"
        messages = self.messages(scenario, tool, arguments, state=state, history=history, mode=mode,
                                 initial_state=initial_state, fault_rules=fault_rules)
        schema = (
            prompts.tracked_response_schema(tool, [*state, *scenario.state_descriptions])
            if tracked
            else prompts.observation_schema(tool)
        )
        earlier = [prompts.true_observation(step) for step in prompts.simulated_steps(history)]
        problems: list[str] = []
        for attempt in range(self.max_repairs + 1):
            tally.attempts = attempt + 1
            completion = await ask_world_model(
                self.model, messages, attempts=tally.attempts, usage=tally.usage, latency_ms=tally.latency_ms,
                response_schema=schema, temperature=self.temperature, seed=self.seed if seed is None else seed,
                max_tokens=self.max_tokens, timeout=tally.remaining(),
            )
            tally.usage = add_usage(tally.usage, completion.usage)
            tally.latency_ms += completion.latency_ms
            try:
                reply = completion.json()
            except LLMOutputError as error:
                problems = [f"the reply is not valid JSON ({error})"]
                reply = None
            if reply is not None:
                outcome = _check(reply, tool, scenario, state, tracked)
                if isinstance(outcome, tuple):
                    observation, patch, new_state = outcome
                    flags = audit_step(scenario, tool, arguments, state_before=state, observation=observation,
                                       patch=patch, state_after=new_state, earlier_observations=earlier, mode=mode)
                    refused = [flag for flag in flags if flag.kind in ENFORCED_FLAGS]
                    if not refused:
                        return Simulation(observation, patch, new_state, tally.usage, tally.latency_ms,
                                          tally.attempts, flags)
                    outcome = [f"{flag.detail} ({flag.kind})" for flag in refused[:_MAX_PROBLEMS]]
                problems = outcome
            messages = [
                *messages,
                {"role": "assistant", "content": completion.text},
                {"role": "user", "content": prompts.repair_message(problems, tracked=tracked)},
            ]
        raise SimulatorError(
            f"the world model gave no valid answer for {tool.name!r} after {tally.attempts} attempts "
            f"({'; '.join(problems)}); the call had no effect, retry it",
            attempts=tally.attempts, usage=tally.usage, latency_ms=tally.latency_ms,
        )


@dataclass
class CallTally:
    """What one tool call has spent on the world model so far, kept where the deadline can report it."""

    deadline: float = DEFAULT_CALL_DEADLINE
    started: float = 0.0
    attempts: int = 0
    usage: Usage = field(default_factory=Usage)
    latency_ms: float = 0.0

    def remaining(self) -> float:
        """Seconds left for the next request: no single request may outlive the call's deadline."""
        return max(1.0, self.deadline - (time.monotonic() - self.started))


async def ask_world_model(model: ModelConfig, messages: list[dict[str, str]], *, attempts: int, usage: Usage,
                          latency_ms: float, **options: Any) -> Completion:
    """One world-model request; an unreachable provider or a failed request become the simulator's errors,
    carrying what the call had cost so far. Their messages, which agents see and episodes store, name only
    the provider's status and error type; its own text (secrets redacted) goes to the operator's log."""
    try:
        return await complete(model, messages, role="world_model", **options)
    except ProviderError as error:
        log.warning("world model %s: %s", model.model, error)
        raise SimulatorUnavailableError(
            f"the world model is unavailable (provider: {error.summary}); the call had no effect, retry it later",
            attempts=attempts, usage=usage, latency_ms=latency_ms,
        ) from error
    except LLMError as error:
        log.warning("world model %s: %s", model.model, error)
        raise SimulatorError(
            f"the world model request failed ({type(error).__name__}); the call had no effect",
            attempts=attempts, usage=usage, latency_ms=latency_ms,
        ) from error


def _check(reply: Any, tool: Tool, scenario: Scenario, state: dict[str, Any],
           tracked: bool) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]] | list[str]:
    """The validated (observation, patch, new state), or the list of problems to send back."""
    unstorable = json_problems(reply, max_depth=_MAX_REPLY_DEPTH)
    if unstorable:
        return [f"the reply {path or '(root)'}: {message}" for path, message in unstorable]
    if not tracked:
        problems = _observation_problems(reply, tool, "the reply")
        return problems or (reply, [], state)
    if not isinstance(reply, dict):
        return [f"the reply must be a JSON object, got {type(reply).__name__}"]
    problems = []
    if "observation" not in reply:
        problems.append('the reply has no "observation" field')
    else:
        problems.extend(_observation_problems(reply["observation"], tool, "observation"))
    patch = reply.get("state_patch")
    operations: list[dict[str, Any]] = []
    new_state = state
    if patch is None:
        problems.append('the reply has no "state_patch" field (use [] when nothing changes)')
    elif not isinstance(patch, list) or not all(isinstance(op, dict) for op in patch):
        problems.append('"state_patch" must be a list of RFC 6902 operation objects')
    elif patch:  # an empty patch leaves the state as it was, valid already: nothing to copy or check
        operations = patch
        try:
            patched = apply_json_patch(state, operations)
        except PatchError as error:
            problems.append(f'"state_patch" does not apply to the current state: {error}')
        else:
            if not isinstance(patched, dict):
                problems.append('"state_patch" must leave the state a JSON object')
            else:
                new_state = patched
                if scenario.state_schema is not None:
                    problems.extend(
                        f"after the patch, state {path or '(root)'}: {message}"
                        for path, message in violations(scenario.state_schema, new_state)[:_MAX_PROBLEMS]
                    )
    if problems:
        return problems
    return reply["observation"], operations, new_state


def _observation_problems(observation: Any, tool: Tool, where: str) -> list[str]:
    if not isinstance(observation, dict):
        return [f"{where} must be a JSON object, got {type(observation).__name__}"]
    if tool.output_schema is None or reports_error(observation):
        return []
    return [
        f"{where} {path or '(root)'}: {message}"
        for path, message in violations(tool.output_schema, observation)[:_MAX_PROBLEMS]
    ]
