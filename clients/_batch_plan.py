"""Planning a batch: the catalog and tasks a run selects, its protocol, every combination and those left to run."""

from __future__ import annotations

from dataclasses import dataclass

from occusim.analysis import Combination, RunConfig, RunDir, RunError
from occusim.environments import (
    Catalog,
    Task,
    UnknownTaskError,
    add_exemplars,
    bundled_may_match,
    load_catalog,
)

from ._cost_estimate import CostEstimate
from ._protocols import load_protocol
from ._replay_agent import REPLAY_AGENT
from ._run_protocol import RunProtocol
from ._run_provenance import current_provenance


@dataclass
class DryRun:
    """What a run would do: every combination, those still to run, and their estimated cost."""

    config: RunConfig
    every: list[Combination]
    work: list[Combination]
    estimate: CostEstimate


@dataclass
class Selection:
    """What a run works on: its catalog, the protocol it speaks, and the tasks that protocol runs."""

    catalog: Catalog
    protocol: RunProtocol
    tasks: list[Task]


def combinations(config: RunConfig, tasks: list[Task]) -> list[Combination]:
    return [
        Combination(task_id=task.id, fault_mode=mode, trial=trial)
        for task in tasks
        for mode in config.faults
        for trial in range(config.trials)
    ]


def select(config: RunConfig, catalog: Catalog | None = None) -> Selection:
    """Load the catalog (unless given) and the run's protocol; the tasks the run selects.

    Raises RunError for a selector that matches nothing, a selection the run cannot play, and the protocol's own
    loading error (HarnessError: OccuBench's harness missing) as it is.
    """
    if catalog is None:
        catalog = load_catalog(config.sources, bundled=bool(config.exemplars) or bundled_may_match(config.tasks))
    if config.exemplars:
        add_exemplars(catalog, config.exemplars)
    try:
        tasks = catalog.select_each(config.tasks)
    except UnknownTaskError as error:
        raise RunError(f"--tasks: {error}") from None
    if not tasks:
        raise RunError(f"no task matches {config.tasks!r}; see `occusim list` for task, scenario and category ids")
    if config.agent_model == REPLAY_AGENT:
        missing = [task.id for task in tasks if not task.reference_solution]
        if missing:
            raise RunError(f"the {REPLAY_AGENT} agent needs reference solutions, which these tasks lack: "
                           f"{', '.join(missing)}")
    protocol = load_protocol(config.protocol, config.sources)
    return Selection(catalog, protocol, protocol.run_tasks(config, catalog, tasks))


def plan(config: RunConfig, selection: Selection, folder: RunDir) -> tuple[RunConfig, list[Combination],
                                                                             list[Combination]]:
    """The run's config with its provenance, every combination of the run, and those still to run (a resumed
    run skips the finished ones); RunError when the folder holds another run."""
    config = config.model_copy(update={"provenance": current_provenance(selection.protocol.provenance())})
    folder.check_resumable(config)
    # An unjudged row is final too: its episode was fine, and re-running it until the judge can read it
    # would keep only the episodes the judge happens to read.
    done = {row.key for row in folder.latest_rows() if row.status in ("ok", "unjudged")}
    every = combinations(config, selection.tasks)
    return config, every, [combo for combo in every if combo.key not in done]
