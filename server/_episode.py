"""One episode: an agent's tool calls against a simulated environment, each committed before it returns."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

from pydantic import BaseModel

from occusim.environments import (
    MAX_JSON_DEPTH,
    EpisodeRecord,
    JsonInputError,
    Scenario,
    SchemaViolation,
    StepRecord,
    Task,
    Tool,
    ToolError,
    check_json,
    reports_error,
    state_hash,
)

from ._degrade import degrade, explicit_error
from ._errors import (
    EpisodeClosedError,
    EpisodeError,
    InvalidArgumentsError,
    RefusedInputError,
    SimulatorError,
    StepConflictError,
    StepLimitError,
    UnknownToolError,
)
from ._faults import FaultSchedule, PlannedFault, fault_rules
from ._protocol import NATIVE, JudgeHook, SimulationProtocol, StepOutcome
from ._schemas import violations
from ._simulator_prompt import simulated_steps, true_observation
from ._store import Store, utcnow
from ._world_model import WorldModel

log = logging.getLogger("occusim.server")

# Told the tenant and the model cost (USD) of each committed step, and of each judgment, that cost something.
CostHook = Callable[[str | None, float], Awaitable[None]]
# Held around each world-model call and the counting of its cost, given the tenant; raises SpendLimitError
# (nothing recorded) when the tenant's spend may not grow.
SpendHold = Callable[[str | None], AbstractAsyncContextManager[None]]


class Episode:
    """A running (or finished) episode of one task. Create and open episodes through EpisodeService.

    `step` raises UnknownToolError, EpisodeClosedError and StepLimitError without recording anything, and
    RefusedInputError for arguments no record can hold (nested deeper than `max_argument_depth`, text
    with lone surrogates or NUL, non-finite or overlong numbers); `submit` raises it for such an answer.
    Everything else is recorded as a step and returned as a StepOutcome: invalid arguments (an
    `invalid_arguments` error, no model call, no state change), injected faults, and world-model failures
    (state untouched): a `simulator_error` when the model gave no valid answer, a `simulator_unavailable`
    when its provider could not be reached. Steps run one at a time; each is committed to the store
    before `step` returns. When another process sharing the store recorded the same step first, the
    episode reloads and runs the call once more; StepConflictError is raised only if that races again.
    """

    def __init__(self, record: EpisodeRecord, *, task: Task, scenario: Scenario, world_model: WorldModel,
                 store: Store, judge: JudgeHook | None = None,
                 on_close: Callable[[Episode], None] | None = None, protocol: SimulationProtocol = NATIVE,
                 max_argument_depth: int = MAX_JSON_DEPTH, on_cost: CostHook | None = None,
                 spend_hold: SpendHold | None = None) -> None:
        self.record = record
        self.task = task
        self.scenario = scenario
        self.world_model = world_model
        self.store = store
        self.judge_hook = judge
        self.protocol = protocol
        self.max_argument_depth = max_argument_depth
        self.schedule = FaultSchedule.for_task(record.faults, task)
        self.verdict: BaseModel | None = None
        self.judge_error: str | None = None
        self._fault_rules = fault_rules(record.faults)
        self._on_close = on_close
        self._on_cost = on_cost
        self._spend_hold = spend_hold
        self._lock = asyncio.Lock()
        self._state_hash = state_hash(record.state)

    def __repr__(self) -> str:
        return f"Episode({self.id!r}, task={self.task.id!r}, status={self.status!r}, steps={len(self.record.steps)})"

    @property
    def id(self) -> str:
        return self.record.id

    @property
    def status(self) -> str:
        return self.record.status

    @property
    def closed(self) -> bool:
        return self.record.status != "open"

    @property
    def state(self) -> dict[str, Any]:
        return self.record.state

    @property
    def tools(self) -> list[Tool]:
        return self.scenario.tools

    @property
    def steps_left(self) -> int:
        return max(0, self.task.max_steps - len(self.record.steps))

    async def step(self, tool: str, arguments: dict[str, Any] | None = None, *,
                   raw_arguments: str | None = None) -> StepOutcome:
        """Run one tool call. See the class docstring for what is raised and what is recorded.

        `raw_arguments` is the agent's own JSON string of the arguments, which a protocol may show its world
        model verbatim.

        A call that has started runs to its end and is recorded even when its caller gives up (a client
        timeout, an MCP cancellation): the world model was paid for, and a retried call runs after it,
        against the state it left, as the next step. Transports therefore behave alike.
        """
        running = asyncio.ensure_future(self._locked_step(tool, arguments, raw_arguments))
        running.add_done_callback(_observe)
        return await asyncio.shield(running)

    async def _locked_step(self, tool: str, arguments: dict[str, Any] | None,
                           raw_arguments: str | None) -> StepOutcome:
        async with self._lock:
            if self.store.shared:
                await self._catch_up()
            try:
                return await self._step(tool, arguments, raw_arguments)
            except StepConflictError:
                # Another process sharing the store recorded this index first: catch up, then run the
                # call against the state it left.
                await self._reload()
                return await self._step(tool, arguments, raw_arguments)

    async def _step(self, tool: str, arguments: dict[str, Any] | None, raw_arguments: str | None) -> StepOutcome:
        if self.closed:
            raise EpisodeClosedError(self.id, self.status)
        index = len(self.record.steps)
        if arguments is not None:
            _accept(arguments, "the arguments", self.max_argument_depth)
        if raw_arguments is not None:
            _accept(raw_arguments, "the arguments", self.max_argument_depth)
        return await self.protocol.step(self, index, tool, arguments, raw_arguments)

    async def simulate(self, index: int, tool: str, arguments: dict[str, Any] | None) -> StepOutcome:
        """occusim's own step: validated arguments, the planned fault, the world model, the degradation."""
        if index >= self.task.max_steps:
            raise StepLimitError(self.id, self.task.max_steps)
        definition = self.scenario.tool(tool)
        if definition is None:
            raise UnknownToolError(tool, [t.name for t in self.scenario.tools])
        arguments = {} if arguments is None else copy.deepcopy(arguments)

        problems = (
            violations(definition.input_schema, arguments)
            if isinstance(arguments, dict)
            else [("", f"arguments must be a JSON object, got {type(arguments).__name__}")]
        )
        if problems:
            error = InvalidArgumentsError(tool, problems)
            observation = ToolError(
                type=error.error_type, message=str(error),
                violations=[SchemaViolation(path=path, message=message) for path, message in problems],
            ).envelope()
            step = self.new_step(index, tool, arguments, observation, is_error=True, error=str(error))
            return await self.commit(step, self.record.state)

        planned = self.schedule.next_fault(self.record.steps)
        if planned is not None and planned.kind == "explicit":
            observation, fault = explicit_error(planned.label, tool)
            step = self.new_step(index, tool, arguments, observation, is_error=True)
            step.fault = fault
            return await self.commit(step, self.record.state)

        async with self.holding_spend():
            return await self._simulated_step(index, tool, definition, arguments, planned)

    async def _simulated_step(self, index: int, tool: str, definition: Tool, arguments: dict[str, Any],
                              planned: PlannedFault | None) -> StepOutcome:
        try:
            simulation = await self.world_model.simulate(
                self.scenario, definition, arguments, state=self.record.state, history=self.record.steps,
                mode=self.record.mode, initial_state=self.record.initial_state, fault_rules=self._fault_rules,
                seed=self.record.faults.seed,
            )
        except SimulatorError as error:
            return await self.commit(self.simulator_failure(index, tool, arguments, error), self.record.state)

        shown: dict[str, Any] = simulation.observation
        step = self.new_step(index, tool, arguments, shown, is_error=False)
        if planned is not None:
            # When nothing can be degraded (an error answer, nothing optional, no earlier answer to repeat)
            # the call stays clean and the schedule hands the fault to the next call.
            degraded = degrade(
                simulation.observation, planned.label, output_schema=definition.output_schema,
                previous=self._previous_observation(tool, arguments), rng=self.schedule.rng(index),
            )
            if degraded is not None:
                shown, step.fault = degraded
                step.observation, step.true_observation = shown, simulation.observation
        step.is_error = reports_error(shown)
        step.state_patch = simulation.patch
        step.flags = simulation.flags
        step.usage, step.latency_ms = simulation.usage, simulation.latency_ms
        new_hash = state_hash(simulation.state) if simulation.patch else self._state_hash
        step.state_hash = new_hash
        return await self.commit(step, simulation.state, new_hash)

    @contextlib.asynccontextmanager
    async def holding_spend(self) -> AsyncIterator[None]:
        """Around a model call and its commit: the tenant's spend is held, and counted before it is let go."""
        if self._spend_hold is None:
            yield
            return
        async with self._spend_hold(self.record.tenant):
            yield

    def simulator_failure(self, index: int, tool: str, arguments: dict[str, Any],
                          error: SimulatorError) -> StepRecord:
        # The type tells an outage (an infrastructure failure) from a model too weak for the scenario.
        observation = ToolError(type=error.error_type, message=str(error)).envelope()
        step = self.new_step(index, tool, arguments, observation, is_error=True, error=str(error))
        step.usage, step.latency_ms = error.usage, error.latency_ms
        return step

    def new_step(self, index: int, tool: str, arguments: Any, observation: Any, *, is_error: bool,
                 error: str | None = None) -> StepRecord:
        return StepRecord(
            index=index, tool=tool, arguments=arguments if isinstance(arguments, dict) else {"value": arguments},
            observation=observation, is_error=is_error, error=error, state_hash=self._state_hash,
            created_at=utcnow(),
        )

    async def commit(self, step: StepRecord, state: dict[str, Any], new_hash: str | None = None) -> StepOutcome:
        # The store write comes first: memory only moves on once the step is durable.
        try:
            await self.store.append_step(self.id, step, state)
        except EpisodeClosedError:
            # Submitted or expired by another process sharing the store: adopt its record, then refuse.
            await self._reload()
            raise
        self.record.steps.append(step)
        self.record.state = state
        if new_hash is not None:
            self._state_hash = new_hash
        if self._on_cost is not None and step.usage.cost_usd:
            await self._on_cost(self.record.tenant, step.usage.cost_usd)
        return StepOutcome(observation=step.observation, is_error=step.is_error, record=step)

    def _previous_observation(self, tool: str, arguments: dict[str, Any]) -> Any:
        """The latest true, non-error answer to the same call (tool and arguments): what a stale cache would hold."""
        for earlier in reversed(simulated_steps(self.record.steps)):
            if earlier.tool == tool and earlier.arguments == arguments:
                answer = true_observation(earlier)
                if not reports_error(answer):
                    return answer
        return None

    async def _catch_up(self) -> None:
        """Reload when another process recorded steps (or closed the episode) since this copy was read:
        behind a proxy without stickiness that is most calls, and simulating from a stale state would pay
        for a model call that the store then refuses."""
        status, step_count = await self.store.progress(self.id)
        if status != self.record.status or step_count != len(self.record.steps):
            await self._reload()

    async def _reload(self) -> None:
        fresh = await self.store.load_episode(self.id)
        self.record = fresh
        self._state_hash = state_hash(fresh.state)

    async def submit(self, answer: str, *, run_judge: bool = True) -> EpisodeRecord:
        """Close the episode with the agent's final answer, then run the judge hook when one is set.

        The status becomes "submitted", or "judged" once a verdict is stored. A failing judge does not
        undo the submission: its message is kept in `judge_error` and the status stays "submitted".
        Raises EpisodeClosedError when the episode is already closed, RefusedInputError for an answer
        that is not text or that no record can hold.
        """
        if not isinstance(answer, str):
            problem = ("", f"must be text, got {type(answer).__name__}")
            raise RefusedInputError(JsonInputError("the answer", [problem]))
        _accept(answer, "the answer", self.max_argument_depth)
        async with self._lock:
            if self.closed:
                raise EpisodeClosedError(self.id, self.status)
            try:
                closed_at = await self.store.close_episode(self.id, status="submitted", final_answer=answer)
            except EpisodeClosedError:
                await self._reload()
                raise
            self.record.status = "submitted"
            self.record.final_answer = answer
            self.record.closed_at = closed_at
        if self._on_close is not None:
            self._on_close(self)
        if run_judge and self.judge_hook is not None:
            await self.judge()
        return self.record

    async def judge(self) -> BaseModel | None:
        """Judge a submitted episode with the hook and store the verdict; None when there is no hook."""
        if self.judge_hook is None:
            return None
        if self.record.status == "open":
            raise EpisodeError(f"episode {self.id} is still open; submit it before judging")
        if self.record.status == "expired":
            raise EpisodeClosedError(self.id, self.status)
        async with contextlib.AsyncExitStack() as held:
            try:
                # Held as a tool call's model call is, and counted before it is let go: a tenant's judgments
                # and calls in flight together cannot pass its daily cap.
                await held.enter_async_context(self.holding_spend())
                verdict = await self.judge_hook(self.task, self.scenario, self.record)
            except Exception as error:  # the judge (or the cap) is not the episode's doing: keep the submission
                self.judge_error = f"{type(error).__name__}: {error}"
                log.warning("judging episode %s failed: %s", self.id, self.judge_error)
                return None
            await self.store.save_judgment(self.id, verdict)
            cost = getattr(getattr(verdict, "usage", None), "cost_usd", None)
            if self._on_cost is not None and cost:
                await self._on_cost(self.record.tenant, cost)
        self.verdict = verdict
        self.judge_error = None
        self.record.status = "judged"
        return verdict

    def mark_expired(self) -> None:
        """Reflect an expiry decided in the store."""
        if not self.closed:
            self.record.status = "expired"
            self.record.closed_at = utcnow()


def _observe(running: asyncio.Future[StepOutcome]) -> None:
    # Whoever awaited the step may be gone; its errors (typed, already answered when awaited) are not lost.
    if not running.cancelled() and running.exception() is not None:
        log.debug("a tool call ended with %r", running.exception())


def _accept(value: object, what: str, max_depth: int) -> None:
    try:
        check_json(value, what, max_depth=max_depth)
    except JsonInputError as error:
        raise RefusedInputError(error) from None
