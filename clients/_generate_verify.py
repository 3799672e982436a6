"""Verification of a generated scenario, as the catalog's are checked: `validate` (with the rubric audit), the
discrimination gates, and simcheck of the references through a world model; each problem is handed to the stage
that owns it."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from pydantic import ValidationError

from occusim.environments import Catalog, format_location, validate_scenario
from occusim.judge import DiscriminationReport, audit_catalog_rubrics, discriminate_catalog
from occusim.server import WorldModel

from ._generate_draft import Draft, StageName, owning_stage
from ._generate_stages import STAGE_LIST
from ._simcheck import SimcheckReport, run_simcheck
from ._simcheck_report import step_problems

DRAFT_SOURCE = "draft"
# The gate a failure of which the reference solution owns; every other gate is the rubric's to meet.
_REFERENCE_GATES = frozenset({"reference-passes"})


@dataclass
class Verification:
    """One round of checks: what each stage must fix, and the figures for the review sheet."""

    validation: list[str] = field(default_factory=list)
    gates: DiscriminationReport | None = None
    simcheck: SimcheckReport | None = None
    min_faithful: float = 1.0
    # Why simcheck measured nothing: no valid answer of the world model (its setting to fix, not a stage's part).
    simcheck_error: str | None = None
    problems: dict[StageName, list[str]] = field(default_factory=lambda: defaultdict(list))

    def add(self, stage: StageName, problem: str, *, validation: bool = False) -> None:
        """Hand `problem` to `stage` (once, though a stage's own check and `validate` both find it)."""
        if validation:
            self.validation.append(problem)
        if problem not in self.problems[stage]:
            self.problems[stage].append(problem)

    @property
    def ok(self) -> bool:
        return not any(self.problems.values()) and self.simcheck_error is None

    @property
    def faithful_rate(self) -> float | None:
        return None if self.simcheck is None else self.simcheck.overall.faithful.rate


async def verify(
    draft: Draft,
    world: WorldModel,
    *,
    task_count: int,
    min_faithful: float = 1.0,
    concurrency: int = 4,
    seed: int = 0,
) -> Verification:
    """Check `draft`: each stage's own checks of its part, then the scenario's; the gates run only on a valid
    scenario, simcheck only on one that passes them."""
    result = Verification(min_faithful=min_faithful)
    for stage in STAGE_LIST:
        part = draft.part(stage.name)
        if part is not None:
            for problem in stage.check(part, draft, task_count):
                result.add(stage.name, problem)
    try:
        scenario = draft.scenario()
    except ValidationError as invalid:
        for place, message in ((format_location(e["loc"]), e["msg"]) for e in invalid.errors()):
            result.add(owning_stage(place), f"{place or '(scenario)'}: {message}", validation=True)
        return result
    catalog = Catalog()
    errors = catalog.add(scenario, DRAFT_SOURCE) + validate_scenario(scenario, DRAFT_SOURCE)
    errors += audit_catalog_rubrics(catalog)
    for error in errors:
        result.add(owning_stage(error.location), f"{error.location}: {error.message}", validation=True)
    if errors:
        return result
    result.gates = discriminate_catalog(catalog)
    for task in result.gates.tasks:
        for failure in task.failures:
            owner: StageName = "references" if failure.gate in _REFERENCE_GATES else "rubrics"
            result.add(owner, f"task {task.task_id}: gate {failure.gate}: {failure.message}")
    checkable = [task for task in scenario.tasks if task.reference_solution]
    if not result.gates.ok or not checkable:  # no reference at all: the references stage is told so
        return result
    result.simcheck = await run_simcheck(catalog, checkable, world, concurrency=concurrency, seed=seed)
    overall = result.simcheck.overall
    if not any(step.fidelity is not None for step in result.simcheck.steps):
        # Not one valid answer: the world model (or how it is reached) is at fault, not a reference.
        first = next((step.error for step in result.simcheck.steps if step.error), "")
        result.simcheck_error = (
            f"the world model {world.name} gave no valid answer to any step of simcheck: {first}"
        )
        return result
    rate = overall.faithful.rate
    if rate is not None and rate < min_faithful:
        for step in result.simcheck.steps:
            if step.status != "unavailable" and not (step.fidelity is not None and step.fidelity.faithful):
                result.add(
                    "references",
                    f"task {step.task_id}: reference_solution[{step.index}] ({step.tool}): the world model, given "
                    f"the rules and the state, answered otherwise: {'; '.join(step_problems(step))}",
                )
    return result
