"""`simcheck`: replay the reference solutions through a world model, each step from its golden state, and score
every simulated step against the golden one (docs/metrics.md, "Simulator fidelity")."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from occusim.analysis import GoldenAnswer, Share, StepFidelity, ratio_interval, score_step, state_pairs
from occusim.environments import (
    Catalog,
    OccusimError,
    Scenario,
    StepFlag,
    StepRecord,
    Task,
    Tool,
    Usage,
    apply_json_patch,
)
from occusim.llm import add_usage
from occusim.server import SimulatorError, SimulatorUnavailableError, WorldModel

StepStatus = Literal["valid", "invalid", "unavailable"]


class SimcheckError(OccusimError, ValueError):
    """The selection cannot be checked (no task, no reference solution); the message says what to change."""


class CheckedStep(BaseModel):
    """One reference call simulated from its golden state, and how it compares with the golden answer."""

    task_id: str
    scenario_id: str
    tool: str
    index: int = Field(description="Position of the call in the task's reference solution.")
    status: StepStatus = Field(description="valid: an answer passed validation (after repairs, if any); "
                                           "invalid: none did; unavailable: the provider could not be reached.")
    attempts: int = 0
    error: str | None = None
    fidelity: StepFidelity | None = Field(default=None, description="Only for valid steps.")
    audit_flags: list[StepFlag] = Field(default_factory=list, description="The per-step audit's flags on the answer.")
    usage: Usage = Field(default_factory=Usage)
    latency_ms: float = 0.0


class FidelityFigures(BaseModel):
    """The fidelity figures of a group of steps (all, one scenario, one tool); each a share with its 95 % CI."""

    group: str
    tasks: int
    steps: int
    unavailable: int = Field(description="Steps left out of every figure: the provider could not be reached.")
    valid: Share = Field(description="Steps with a valid answer (after repairs) / answered steps.")
    first_try: Share = Field(description="Steps valid at the first attempt / answered steps.")
    grounded: Share = Field(description="Valid steps whose observation names no ungrounded entity / valid steps.")
    complete: Share = Field(description="Valid steps omitting no golden entity / valid steps whose golden lists one.")
    entity_recall: Share = Field(description="Golden entities shown / golden entities, over valid steps.")
    values_agree: Share = Field(description="Valid steps whose state-derived fields all agree / those with one.")
    value_fields: Share = Field(description="State-derived fields that agree / those compared.")
    no_invented_fields: Share = Field(description="Valid steps without an invented field / valid steps.")
    patch_agrees: Share = Field(description="Valid steps of writing tools that change the state as golden / those.")
    read_only_kept: Share = Field(description="Valid steps of read-only tools leaving the state unchanged / those.")
    faithful: Share = Field(description="Answered steps that are valid and pass every check / answered steps.")
    audit_flagged: Share = Field(description="Valid steps the per-step audit flagged / valid steps.")
    audit_flagged_unfaithful: Share = Field(description="Of the valid steps that are not faithful, those flagged.")
    audit_flagged_faithful: Share = Field(description="Of the faithful steps, those the audit flagged.")


class SimcheckReport(BaseModel):
    """What `occusim simcheck` found: the settings, the figures overall, by scenario and by tool, every step."""

    world_model: str
    tasks: str = Field(description="The task selection.")
    task_count: int
    created_at: datetime
    usage: Usage = Field(description="What the world model's calls cost, repairs included.")
    overall: FidelityFigures
    by_scenario: list[FidelityFigures]
    by_tool: list[FidelityFigures] = Field(description="Groups named scenario/tool.")
    steps: list[CheckedStep]


def select_checkable(catalog: Catalog, selection: str) -> list[Task]:
    """The selected tasks that have a reference solution; SimcheckError when there is none to check."""
    tasks = catalog.select(selection)
    if not tasks:
        raise SimcheckError(f"no task matches {selection!r}; see `occusim list` for task, scenario and category ids")
    checkable = [task for task in tasks if task.reference_solution]
    if not checkable:
        raise SimcheckError(f"none of the {len(tasks)} task(s) matching {selection!r} has a reference solution "
                            "to replay")
    return checkable


async def run_simcheck(catalog: Catalog, tasks: list[Task], world: WorldModel, *, selection: str = "all",
                       concurrency: int = 4, seed: int = 0,
                       on_step: Callable[[CheckedStep], None] | None = None) -> SimcheckReport:
    """Simulate every reference call of `tasks` with `world`, each from the golden state before it."""
    if concurrency < 1:
        raise SimcheckError(f"concurrency must be at least 1, got {concurrency}")
    slots = asyncio.Semaphore(concurrency)

    async def check(job: _Job) -> CheckedStep:
        async with slots:
            step = await _check(world, job, seed)
        if on_step is not None:
            on_step(step)
        return step

    steps = list(await asyncio.gather(*(check(job) for job in _jobs(catalog, tasks))))
    usage = Usage()
    for step in steps:
        usage = add_usage(usage, step.usage)
    return SimcheckReport(
        world_model=world.name, tasks=selection, task_count=len(tasks), created_at=datetime.now(UTC), usage=usage,
        overall=figures("all", steps),
        by_scenario=[figures(name, group) for name, group in _grouped(steps, lambda s: s.scenario_id)],
        by_tool=[figures(name, group) for name, group in _grouped(steps, lambda s: f"{s.scenario_id}/{s.tool}")],
        steps=steps,
    )


@dataclass(frozen=True)
class _Job:
    task: Task
    scenario: Scenario
    tool: Tool
    index: int
    golden: GoldenAnswer
    history: list[StepRecord]


def _jobs(catalog: Catalog, tasks: Iterable[Task]) -> list[_Job]:
    """One job per reference call: the golden state before it, and the golden calls before it as history."""
    jobs = []
    for task in tasks:
        scenario = catalog.scenario_of(task)
        state = catalog.initial_state(task)
        pairs = state_pairs(state)
        history: list[StepRecord] = []
        observations: list[Any] = []
        for index, reference in enumerate(task.reference_solution):
            after = apply_json_patch(state, reference.state_patch)
            pairs_after = state_pairs(after) if reference.state_patch else pairs
            tool = scenario.tool(reference.tool)
            if tool is not None:
                golden = GoldenAnswer(state_before=state, state_after=after, arguments=reference.arguments,
                                    observation=reference.observation, earlier_observations=tuple(observations),
                                    output_schema=tool.output_schema, read_only=tool.read_only is True,
                                    pairs_before=pairs, pairs_after=pairs_after)
                jobs.append(_Job(task, scenario, tool, index, golden, list(history)))
            history.append(StepRecord(index=index, tool=reference.tool, arguments=reference.arguments,
                                      observation=reference.observation, state_patch=reference.state_patch))
            observations.append(reference.observation)
            state, pairs = after, pairs_after
    return jobs


async def _check(world: WorldModel, job: _Job, seed: int) -> CheckedStep:
    step = CheckedStep(task_id=job.task.id, scenario_id=job.scenario.id, tool=job.tool.name, index=job.index,
                       status="valid")
    try:
        simulation = await world.simulate(job.scenario, job.tool, job.golden.arguments,
                                          state=job.golden.state_before, history=job.history, mode="tracked",
                                          seed=seed)
    except SimulatorError as error:
        return step.model_copy(update={
            "status": "unavailable" if isinstance(error, SimulatorUnavailableError) else "invalid",
            "attempts": error.attempts, "error": str(error), "usage": error.usage, "latency_ms": error.latency_ms,
        })
    return step.model_copy(update={
        "attempts": simulation.attempts, "usage": simulation.usage, "latency_ms": simulation.latency_ms,
        "audit_flags": simulation.flags,
        "fidelity": score_step(job.golden, simulation.observation, simulation.state),
    })


def _grouped(steps: list[CheckedStep], key: Callable[[CheckedStep], str]) -> list[tuple[str, list[CheckedStep]]]:
    groups: dict[str, list[CheckedStep]] = defaultdict(list)
    for step in steps:
        groups[key(step)].append(step)
    return sorted(groups.items())


def _share(steps: list[CheckedStep], count: Callable[[CheckedStep], float],
           total: Callable[[CheckedStep], float]) -> Share:
    """sum(count) / sum(total) over `steps`, with a 95 % interval that resamples tasks (docs/metrics.md)."""
    by_task: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for step in steps:
        by_task[step.task_id][0] += count(step)
        by_task[step.task_id][1] += total(step)
    cells = [by_task[task] for task in sorted(by_task) if by_task[task][1]]
    counted, totals = [c for c, _ in cells], [t for _, t in cells]
    return Share(count=round(sum(counted)), total=round(sum(totals)),
                 ci=ratio_interval(counted, totals) if cells else None)


def _valid(check: Callable[[StepFidelity], bool], applies: Callable[[StepFidelity], bool] = lambda f: True,
           ) -> tuple[Callable[[CheckedStep], float], Callable[[CheckedStep], float]]:
    """(count, total) functions of a check over the valid steps it applies to."""
    def total(step: CheckedStep) -> float:
        return float(step.fidelity is not None and applies(step.fidelity))

    def count(step: CheckedStep) -> float:
        return float(step.fidelity is not None and applies(step.fidelity) and check(step.fidelity))

    return count, total


def figures(group: str, steps: list[CheckedStep]) -> FidelityFigures:
    """Every fidelity figure of `steps`; the definitions are in docs/metrics.md."""
    answered = [step for step in steps if step.status != "unavailable"]

    def fidelity(step: CheckedStep) -> StepFidelity:
        assert step.fidelity is not None
        return step.fidelity

    def counted(step: CheckedStep) -> float:
        return float(step.fidelity is not None)

    return FidelityFigures(
        group=group, tasks=len({step.task_id for step in steps}), steps=len(steps),
        unavailable=len(steps) - len(answered),
        valid=_share(answered, counted, lambda s: 1.0),
        first_try=_share(answered, lambda s: float(s.fidelity is not None and s.attempts == 1), lambda s: 1.0),
        grounded=_share(answered, *_valid(lambda f: f.grounded)),
        complete=_share(answered, *_valid(lambda f: f.complete, lambda f: f.golden_entities > 0)),
        entity_recall=_share([s for s in answered if s.fidelity is not None],
                             lambda s: fidelity(s).golden_entities - len(fidelity(s).omitted),
                             lambda s: fidelity(s).golden_entities),
        values_agree=_share(answered, *_valid(lambda f: f.values_agree, lambda f: f.values_compared > 0)),
        value_fields=_share([s for s in answered if s.fidelity is not None],
                            lambda s: fidelity(s).values_compared - len(fidelity(s).values_differing),
                            lambda s: fidelity(s).values_compared),
        no_invented_fields=_share(answered, *_valid(lambda f: not f.invented_fields)),
        patch_agrees=_share(answered, *_valid(lambda f: f.patch_agrees, lambda f: f.patch_checked)),
        read_only_kept=_share(answered, *_valid(lambda f: not f.read_only_writes, lambda f: f.read_only)),
        faithful=_share(answered, lambda s: float(s.fidelity is not None and s.fidelity.faithful), lambda s: 1.0),
        audit_flagged=_share(answered, lambda s: float(s.fidelity is not None and bool(s.audit_flags)), counted),
        audit_flagged_unfaithful=_share(answered, *_valid_flagged(faithful=False)),
        audit_flagged_faithful=_share(answered, *_valid_flagged(faithful=True)),
    )


def _valid_flagged(*, faithful: bool) -> tuple[Callable[[CheckedStep], float], Callable[[CheckedStep], float]]:
    """(count, total) functions: the valid steps whose faithfulness is `faithful`, and those the audit flagged."""
    def total(step: CheckedStep) -> float:
        return float(step.fidelity is not None and step.fidelity.faithful == faithful)

    def count(step: CheckedStep) -> float:
        return float(total(step) and bool(step.audit_flags))

    return count, total
