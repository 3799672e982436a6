"""Verification of a generated scenario, as the catalog's are checked: `validate` (with the rubric audit), the
discrimination gates, and simcheck of the references through a world model; each problem is handed to the stage
that owns it."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from occusim.environments import Catalog, OccusimError, Scenario, validate_scenario
from occusim.judge import DiscriminationReport, audit_catalog_rubrics, discriminate_catalog
from occusim.server import WorldModel

from ._generate_draft import StageName, owning_stage
from ._simcheck import SimcheckReport, run_simcheck, select_checkable
from ._simcheck_report import step_problems

DRAFT_SOURCE = "draft"
# The gate a failure of which the reference solution owns; every other gate is the rubric's to meet.
_REFERENCE_GATES = frozenset({"reference-passes"})


class WorldModelUnreachableError(OccusimError):
    """simcheck could not reach the world model for any step: the setting to fix is the world model's."""

    exit_code = 1


@dataclass
class Verification:
    """One round of checks: what each stage must fix, and the figures for the review sheet."""

    validation: list[str] = field(default_factory=list)
    gates: DiscriminationReport | None = None
    simcheck: SimcheckReport | None = None
    min_faithful: float = 1.0
    problems: dict[StageName, list[str]] = field(default_factory=lambda: defaultdict(list))

    @property
    def ok(self) -> bool:
        return not any(self.problems.values())

    @property
    def faithful_rate(self) -> float | None:
        return None if self.simcheck is None else self.simcheck.overall.faithful.rate


async def verify(
    scenario: Scenario, world: WorldModel, *, min_faithful: float = 1.0, concurrency: int = 4, seed: int = 0
) -> Verification:
    """Check `scenario`; the gates run only on a valid scenario, simcheck only on one that passes them."""
    result = Verification(min_faithful=min_faithful)
    catalog = Catalog()
    errors = catalog.add(scenario, DRAFT_SOURCE) + validate_scenario(scenario, DRAFT_SOURCE)
    errors += audit_catalog_rubrics(catalog)
    for error in errors:
        result.validation.append(f"{error.location}: {error.message}")
        result.problems[owning_stage(error.location)].append(f"{error.location}: {error.message}")
    if errors:
        return result
    result.gates = discriminate_catalog(catalog)
    for task in result.gates.tasks:
        for failure in task.failures:
            stage: StageName = "references" if failure.gate in _REFERENCE_GATES else "rubrics"
            result.problems[stage].append(f"task {task.task_id}: gate {failure.gate}: {failure.message}")
    if not result.gates.ok:
        return result
    result.simcheck = await run_simcheck(
        catalog, select_checkable(catalog, "all"), world, concurrency=concurrency, seed=seed
    )
    overall = result.simcheck.overall
    if overall.unavailable == overall.steps:
        first = next((step.error for step in result.simcheck.steps if step.error), "")
        raise WorldModelUnreachableError(
            f"the world model {world.name} answered no step of simcheck: {first}"
        )
    rate = overall.faithful.rate
    if rate is not None and rate < min_faithful:
        for step in result.simcheck.steps:
            if step.status != "unavailable" and not (step.fidelity is not None and step.fidelity.faithful):
                result.problems["references"].append(
                    f"task {step.task_id}: reference_solution[{step.index}] ({step.tool}): the world model, given "
                    f"the rules and the state, answered otherwise: {'; '.join(step_problems(step))}"
                )
    return result
