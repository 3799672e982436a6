"""Batch evaluation: every (task, fault mode, trial) as a real MCP episode, concurrently, resumable."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp.shared.exceptions import MCPError

from occusim.analysis import (
    AuditCoverage,
    Combination,
    Provenance,
    ResultRow,
    RowStatus,
    RunConfig,
    RunDir,
    RunError,
    StepFlags,
)
from occusim.environments import (
    Catalog,
    EpisodeRecord,
    FaultSettings,
    HarnessError,
    HarnessPrompts,
    StepRecord,
    Task,
    ToolErrorType,
    UnknownTaskError,
    Usage,
    add_exemplars,
    bundled_may_match,
    harness_source,
    load_catalog,
    load_harness,
    occubench_config,
    read_tool_error,
)
from occusim.judge import JudgeModelError, Verdict, judge, trajectory_from_messages, verify_occubench
from occusim.llm import ModelConfig, ProviderError, UsageLedger, sum_usage
from occusim.server import Store, fault_tally

from ._agent import Agent, LLMAgent
from ._budget import CostBudget
from ._conversation import AgentRun
from ._cost_estimate import CostEstimate, estimate_cost
from ._executor import Executor, WorkPlan
from ._local_executor import LocalExecutor
from ._occubench_agent import OccubenchAgent
from ._process_executor import ProcessExecutor
from ._replay_agent import REPLAY_AGENT, ReplayAgent
from ._run_provenance import current_provenance
from ._setup_errors import configuration_setting, world_model_setup_error
from ._transports import EpisodeTransport, HttpTransport, InProcessTransport, StdioTransport
from ._worker_spec import WorkerSpec, forwarded_environment

log = logging.getLogger("occusim.clients")

# The error types of a step the world model gave no usable answer for: it gave up after its repairs, or
# its provider could not be reached (an outage, outside the agent's control).
_SIMULATOR_ERRORS = (ToolErrorType.SIMULATOR_ERROR, ToolErrorType.SIMULATOR_UNAVAILABLE)


class InfraError(Exception):
    """The episode could not be run properly for reasons outside the agent: never scored against it."""


@dataclass
class BatchSummary:
    """What one `run_batch` call did; `rows` holds the latest row of every combination of the run."""

    run_dir: Path
    config: RunConfig
    rows: list[ResultRow]
    ran: int = 0
    skipped: int = 0
    new_rows: list[ResultRow] = field(default_factory=list)
    # Combinations left unscheduled because --max-cost was reached (a later run picks them up).
    unscheduled: int = 0
    spent_usd: float | None = None
    # The row of the first configuration error, which stopped the run (its setting says what to fix).
    stopped_by: ResultRow | None = None


@dataclass
class DryRun:
    """What a run would do: every combination, those still to run, and their estimated cost."""

    config: RunConfig
    every: list[Combination]
    work: list[Combination]
    estimate: CostEstimate


def combinations(config: RunConfig, tasks: list[Task]) -> list[Combination]:
    return [
        Combination(task_id=task.id, fault_mode=mode, trial=trial)
        for task in tasks
        for mode in config.faults
        for trial in range(config.trials)
    ]


def _error_type(step: StepRecord) -> str | None:
    error = read_tool_error(step.observation)
    return error.type if error is not None else None


def is_simulator_error(step: StepRecord) -> bool:
    """A step whose world model gave no usable answer (repairs exhausted or provider down)."""
    return _error_type(step) in _SIMULATOR_ERRORS


def is_world_model_outage(step: StepRecord) -> bool:
    """A step whose world model's provider could not be reached: the runtime's `simulator_unavailable`."""
    return _error_type(step) == ToolErrorType.SIMULATOR_UNAVAILABLE


def infra_failure(error: BaseException) -> bool:
    """Whether `error` is an infrastructure failure (retried, labelled infra_error) rather than a bug."""
    if isinstance(error, BaseExceptionGroup):
        return all(infra_failure(inner) for inner in error.exceptions)
    import anyio
    import httpx

    return isinstance(error, (InfraError, ProviderError, JudgeModelError, TimeoutError, OSError, MCPError,
                              httpx.HTTPError, anyio.ClosedResourceError, anyio.BrokenResourceError,
                              anyio.EndOfStream))


def describe(error: BaseException) -> str:
    if isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        return describe(error.exceptions[0])
    if isinstance(error, TimeoutError) and not str(error):
        return "TimeoutError: the episode ran past --episode-timeout"
    return f"{type(error).__name__}: {error}"


class BatchRunner:
    """Runs a RunConfig into a run folder; see `run_batch`."""

    def __init__(self, config: RunConfig, out: str | Path, *, catalog: Catalog | None = None,
                 show_progress: bool = True, on_row: Callable[[ResultRow], None] | None = None) -> None:
        self.config = config
        self.folder = RunDir(out)
        self.catalog = catalog
        self.catalog_given = catalog is not None
        self.show_progress = show_progress
        self.on_row = on_row
        self.store: Store | None = None
        self.transport: EpisodeTransport | None = None
        # OccuBench's harness, read from the user's checkout, under --protocol occubench.
        self.harness: HarnessPrompts | None = None
        self._write_lock = asyncio.Lock()
        self._judge = ModelConfig.for_role("judge", model=config.judge_model)
        self._agent_model = (
            None if config.agent_model == REPLAY_AGENT else ModelConfig.for_role("agent", model=config.agent_model)
        )

    def prepare(self) -> list[Task]:
        """Load the catalog (and OccuBench's harness under --protocol occubench); the tasks the run selects."""
        config = self.config
        catalog = self.catalog if self.catalog is not None else load_catalog(
            config.sources, bundled=bool(config.exemplars) or bundled_may_match(config.tasks))
        self.catalog = catalog
        if config.exemplars:
            add_exemplars(catalog, config.exemplars)
        try:
            tasks = catalog.select_each(config.tasks)
        except UnknownTaskError as error:
            raise RunError(f"--tasks: {error}") from None
        if not tasks:
            raise RunError(f"no task matches {config.tasks!r}; see `occusim list` for task, scenario and category ids")
        if self._agent_model is None:
            missing = [task.id for task in tasks if not task.reference_solution]
            if missing:
                raise RunError(f"the {REPLAY_AGENT} agent needs reference solutions, which these tasks lack: "
                               f"{', '.join(missing)}")
        if config.protocol == "occubench":
            self.harness, tasks = _occubench_setup(config, catalog, tasks)
        return tasks

    def plan(self) -> tuple[list[Combination], list[Combination]]:
        """Every combination of the run and those still to run (a resumed run skips the finished ones)."""
        tasks = self.prepare()
        provenance = Provenance(protocol=self.config.protocol,
                                harness_files=self.harness.files if self.harness is not None else {})
        self.config = self.config.model_copy(update={"provenance": current_provenance(provenance)})
        self.folder.check_resumable(self.config)
        # An unjudged row is final too: its episode was fine, and re-running it until the judge can read it
        # would keep only the episodes the judge happens to read.
        done = {row.key for row in self.folder.latest_rows() if row.status in ("ok", "unjudged")}
        every = combinations(self.config, tasks)
        return every, [combo for combo in every if combo.key not in done]

    def dry_run(self) -> DryRun:
        """What `run` would do, and its estimated cost, without running anything or writing the folder."""
        every, work = self.plan()
        assert self.catalog is not None
        estimate = estimate_cost(self.config, self.catalog, work, self.folder.latest_rows())
        return DryRun(self.config, every, work, estimate)

    async def run(self) -> BatchSummary:
        every, work = self.plan()
        config = self.config
        self.folder.write_config(config)
        summary = BatchSummary(self.folder.path, config, [], skipped=len(every) - len(work))
        if work:
            budget = CostBudget(config.max_cost) if config.max_cost is not None else None
            with _Progress(len(work), summary.skipped, enabled=self.show_progress) as progress:
                plan = WorkPlan(work, record=lambda row: self._record(row, progress), lost_row=self._lost_row,
                                retries=config.infra_retries, budget=budget)
                await self._execute(plan)
            summary.new_rows = plan.rows
            summary.unscheduled = plan.unscheduled
            summary.stopped_by = plan.stopped_by
            summary.spent_usd = budget.spent if budget is not None else None
        summary.ran = len(summary.new_rows)
        summary.rows = self.folder.latest_rows()
        return summary

    async def _execute(self, plan: WorkPlan) -> None:
        """Run the plan in this process (one worker), in worker processes or on a Ray cluster."""
        config = self.config
        db = config.db or self.folder.default_db
        if config.executor == "local" and (config.workers or 1) == 1:
            async with self.session(db):
                await LocalExecutor(self, config.concurrency).run(plan)
            return
        if self.catalog_given:
            raise RunError("worker processes load the catalog from the run's sources; pass no catalog object, "
                           "or run with one worker")
        # The driver creates (or migrates) the store once, before any worker opens it.
        async with Store(db):
            pass
        spec = WorkerSpec(config=config, out=str(self.folder.path.resolve()), db=db,
                          environment=forwarded_environment())
        executor: Executor
        if config.executor == "ray":
            from ._ray_executor import RayExecutor

            executor = RayExecutor(worker_runner, spec, workers=config.workers, concurrency=config.concurrency,
                                   address=config.ray_address)
        else:
            executor = ProcessExecutor(worker_runner, spec, workers=config.workers or 1,
                                       concurrency=config.concurrency)
        await executor.run(plan)

    @asynccontextmanager
    async def session(self, db: str) -> AsyncIterator[BatchRunner]:
        """The store and the MCP transport this runner's episodes use, open; `prepare` first."""
        assert self.catalog is not None
        if not self.config.cache:
            from occusim.llm import set_default_cache

            set_default_cache(None)
        async with Store(db) as store:
            self.store = store
            self.transport = await self._open_transport(self.catalog, store)
            try:
                yield self
            finally:
                await self.transport.close()

    async def _record(self, row: ResultRow, progress: _Progress) -> None:
        """Append a finished row to results.jsonl (the driver alone writes it) and show it."""
        async with self._write_lock:
            await asyncio.to_thread(self.folder.append_row, row)
        progress.advance(row)
        if self.on_row is not None:
            self.on_row(row)

    def _lost_row(self, combo: Combination, attempts: int, why: str) -> ResultRow:
        return self._row(combo, status="infra_error", error=f"worker lost: {why}", attempts=attempts, usage={},
                         duration=0.0)

    async def _open_transport(self, catalog: Catalog, store: Store) -> EpisodeTransport:
        config = self.config
        # A stuck MCP read must not outlive the episode's own timeout.
        read_timeout = config.episode_timeout
        mode = "occubench" if config.protocol == "occubench" else config.mode
        if config.transport == "stdio":
            return StdioTransport(db=store.url, world_model=config.world_model, sources=config.sources,
                                  mode=mode, cache=config.cache, read_timeout=read_timeout)
        if config.transport == "http":
            return await HttpTransport(catalog, store, world_model=config.world_model, mode=mode,
                                       read_timeout=read_timeout, sources=config.sources).start()
        return InProcessTransport(catalog, store, world_model=config.world_model, mode=mode,
                                  read_timeout=read_timeout, harness=self.harness)

    async def run_combination(self, combo: Combination) -> ResultRow:
        """Run one combination, retrying infrastructure failures; always returns a row."""
        started = time.perf_counter()
        attempts = self.config.infra_retries + 1
        spent = UsageLedger()
        error: BaseException | None = None
        for attempt in range(1, attempts + 1):
            try:
                async with asyncio.timeout(self.config.episode_timeout):
                    return await self._episode(combo, attempt, spent, started)
            except Exception as failure:  # classified below: infrastructure is retried, anything else is not
                error = failure
                setting = configuration_setting(failure)
                if setting is not None:  # retrying cannot help, and the run stops here
                    log.error("episode %s/%s/trial %d: %s", *combo.key, describe(failure))
                    return self._row(combo, status="infra_error", error=describe(failure), attempts=attempt,
                                     usage=spent.by_role, duration=time.perf_counter() - started,
                                     configuration_error=setting)
                if not infra_failure(failure):
                    log.exception("episode %s/%s/trial %d failed unexpectedly", *combo.key)
                    break
                log.warning("episode %s/%s/trial %d, attempt %d of %d: %s", *combo.key, attempt, attempts,
                            describe(failure))
        assert error is not None
        return self._row(combo, status="infra_error", error=describe(error), attempts=attempt,
                         usage=spent.by_role, duration=time.perf_counter() - started)

    def _fault_settings(self, combo: Combination) -> FaultSettings:
        """The faults of one combination; their seed is the trial's, which the world model is sent too."""
        config = self.config
        return FaultSettings(mode=combo.fault_mode, count=config.fault_count, duration=config.fault_duration,
                             seed=config.trial_seed(combo.trial))

    def _agent(self, task: Task) -> Agent:
        if self._agent_model is None:
            return ReplayAgent(task)
        if self.harness is not None:
            return OccubenchAgent(self._agent_model, self.harness, scenario_name=task.title,
                                  instruction=task.instruction, timeout=self.config.episode_timeout)
        return LLMAgent(self._agent_model, temperature=self.config.agent_temperature,
                        timeout=self.config.episode_timeout)

    async def _episode(self, combo: Combination, attempt: int, spent: UsageLedger, started: float) -> ResultRow:
        assert self.catalog is not None and self.store is not None and self.transport is not None
        config = self.config
        task = self.catalog.task(combo.task_id)
        scenario = self.catalog.scenario_of(task)
        seed = config.trial_seed(combo.trial)
        faults = self._fault_settings(combo)
        agent = self._agent(task)
        episode_id = uuid.uuid4().hex
        run: AgentRun | None = None
        try:
            async with self.transport.episode(task, faults, episode_id) as (client, episode_id):
                # Under --protocol occubench the harness's own turn limit applies unless one is set.
                turns = config.agent_max_turns or (None if self.harness else task.max_steps + 5)
                run = await agent.run(client, occupation=scenario.occupation, seed=seed, max_turns=turns)
        finally:
            if run is not None:
                spent.add("agent", run.usage)
        record = self.transport.closed_record(episode_id) or await self.store.load_episode(episode_id)
        world_usage = sum_usage(step.usage for step in record.steps)
        spent.add("world_model", world_usage)
        outages = [step for step in record.steps if is_world_model_outage(step)]
        if outages:
            setup = world_model_setup_error(outages[0].error, config.world_model)
            if setup is not None:
                raise setup
            raise InfraError(f"world model outage at step {outages[0].index}: {outages[0].error}")
        if record.status == "open":
            raise InfraError(f"episode {record.id} was never submitted (the agent stopped: {run and run.ended})")
        if self.harness is not None:
            assert run is not None and self.catalog is not None
            verdict = await verify_occubench(
                self.harness, task, occubench_config(self.catalog.origins[scenario.id]),
                trajectory_from_messages(self.harness, run.messages), record_id=record.id, model=self._judge,
                seed=seed,
            )
        else:
            verdict = await judge(task, record, scenario=scenario, model=self._judge, votes=config.judge_votes,
                                  seed=seed)
        spent.add("judge", verdict.usage)
        await self.store.save_judgment(record.id, verdict)
        assert run is not None
        return self._row(
            combo, status="unjudged" if verdict.unjudged else "ok", attempts=attempt, usage=spent.by_role,
            duration=time.perf_counter() - started, record=record, run=run, verdict=verdict,
        )

    def _row(self, combo: Combination, *, status: RowStatus, attempts: int, usage: dict[str, Usage], duration: float,
             error: str | None = None, record: EpisodeRecord | None = None, run: AgentRun | None = None,
             verdict: Verdict | None = None, configuration_error: str | None = None) -> ResultRow:
        assert self.catalog is not None
        config = self.config
        task = self.catalog.task(combo.task_id)
        scenario = self.catalog.scenario_of(task)
        steps = record.steps if record is not None else []
        scored = verdict if verdict is not None and not verdict.unjudged else None
        # Under --protocol occubench the world model injects the faults from its prompt: the server plans none.
        faults = fault_tally(self._fault_settings(combo), task.id, steps) if self.harness is None else None
        return ResultRow(
            task_id=task.id, scenario_id=scenario.id, category=scenario.category, difficulty=task.difficulty,
            fault_mode=combo.fault_mode, fault_count=config.fault_count, fault_duration=config.fault_duration,
            trial=combo.trial, seed=config.trial_seed(combo.trial), agent_model=config.agent_model,
            world_model=config.world_model, judge_model=config.judge_model, transport=config.transport,
            status=status, error=error, configuration_error=configuration_error, attempts=attempts, episode_id=record.id if record else None,
            score=scored.score if scored else None, passed=bool(scored.passed) if scored else None,
            verdict=verdict, **_judge_counts(verdict),
            usage={role: usage.get(role, Usage()) for role in ("agent", "world_model", "judge")},
            steps=len(steps), simulator_errors=sum(1 for step in steps if is_simulator_error(step)),
            faults_injected=[step.fault.label for step in steps if step.fault is not None],
            audited=_audit_coverage(record), flagged_steps=[StepFlags(step=step.index, tool=step.tool, flags=step.flags)
                                                            for step in steps if step.flags],
            faults_planned=faults.planned if faults else 0, faults_met=faults.met if faults else 0,
            too_short_for_faults=record is not None and faults is not None and faults.too_short,
            agent_ended=run.ended if run else None, final_answer=run.final_answer if run else None,
            messages=run.messages if run else [], tools=run.tools if run else [], duration_s=round(duration, 3),
        )


@asynccontextmanager
async def worker_runner(spec_json: str) -> AsyncIterator[BatchRunner]:
    """A worker's runner (a worker process or a Ray actor): the driver's settings, store and catalog sources."""
    spec = WorkerSpec.model_validate_json(spec_json)
    runner = BatchRunner(spec.config, spec.out, show_progress=False)
    runner.prepare()
    async with runner.session(spec.db) as opened:
        yield opened


def _audit_coverage(record: EpisodeRecord | None) -> AuditCoverage | None:
    if record is None or record.mode == "occubench":
        return None
    return "state" if record.mode == "tracked" else "no_state"


def _occubench_setup(config: RunConfig, catalog: Catalog, tasks: list[Task]) -> tuple[HarnessPrompts, list[Task]]:
    """OccuBench's harness beside the run's OccuBench source, and the tasks it runs: OccuBench's own.

    `--tasks all` means every OccuBench task loaded; a selection naming any other task is refused.
    """
    if "prompt" in config.faults:
        raise RunError("--protocol occubench has OccuBench's fault modes E0-E3; drop 'prompt' from --faults")
    try:
        harness = load_harness(harness_source(config.sources))
    except HarnessError as error:
        raise RunError(str(error)) from None

    def is_occubench(task: Task) -> bool:
        scenario = catalog.scenario_of(task)
        return scenario.simulator_prompt is not None and catalog.origins[scenario.id].startswith("occubench:")

    if config.tasks == "all":
        return harness, [task for task in tasks if is_occubench(task)]
    others = [task.id for task in tasks if not is_occubench(task)]
    if others:
        shown = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
        raise RunError(f"--protocol occubench runs OccuBench tasks only; not from an occubench: source: {shown} "
                       "(narrow --tasks, e.g. --tasks 'occubench/*')")
    return harness, tasks


def _judge_counts(verdict: Verdict | None) -> dict[str, Any]:
    """The judge's abstentions, ties, re-asks and undecided checks, as row fields the report can add up."""
    if verdict is None:
        return {}
    voted = [check for item in verdict.items if item.kind == "llm" for check in item.checks if check.votes]
    return {"judge_checks": len(voted), "judge_check_votes": sum(len(check.votes) for check in voted),
            "judge_abstentions": verdict.abstentions, "judge_ties": len(verdict.ties),
            "judge_reasks": verdict.reasks, "unjudged_checks": verdict.unjudged_checks}


class _Progress:
    """A rich progress bar showing the pass rate so far; silent when disabled."""

    def __init__(self, total: int, skipped: int, *, enabled: bool) -> None:
        self.total = total
        self.skipped = skipped
        self.enabled = enabled
        self.passed = 0
        self.scored = 0
        self.infra = 0
        self.unjudged = 0
        self._progress: Any = None
        self._task: Any = None

    def __enter__(self) -> _Progress:
        if self.enabled:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self._progress = Progress(
                TextColumn("[bold]episodes"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.description}"),
                TimeElapsedColumn(),
            )
            self._progress.__enter__()
            self._task = self._progress.add_task(self._text(), total=self.total)
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._progress is not None:
            self._progress.__exit__(*exc_info)

    def advance(self, row: ResultRow) -> None:
        if row.status == "ok":
            self.scored += 1
            self.passed += int(bool(row.passed))
        elif row.status == "unjudged":
            self.unjudged += 1
        else:
            self.infra += 1
        if self._progress is not None:
            self._progress.update(self._task, advance=1, description=self._text())

    def _text(self) -> str:
        rate = f"{self.passed / self.scored:.0%}" if self.scored else "-"
        text = f"pass {self.passed}/{self.scored} ({rate})  infra errors {self.infra}  unjudged {self.unjudged}"
        return text + (f"  resumed past {self.skipped}" if self.skipped else "")


async def run_batch(config: RunConfig, out: str | Path, *, catalog: Catalog | None = None,
                    show_progress: bool = True) -> BatchSummary:
    """Run every (task, fault mode, trial) of `config` into the folder `out`.

    Rows are appended to out/results.jsonl as episodes finish; a second call with the same folder skips
    the combinations already scored (infra errors are tried again). Raises RunError for an unusable
    configuration or folder.
    """
    return await BatchRunner(config, out, catalog=catalog, show_progress=show_progress).run()


def plan_batch(config: RunConfig, out: str | Path, *, catalog: Catalog | None = None) -> DryRun:
    """What `run_batch` would run into `out` and what it would cost (`occusim run --dry-run`); runs nothing.

    Raises RunError for an unusable configuration or folder, as `run_batch` would.
    """
    return BatchRunner(config, out, catalog=catalog, show_progress=False).dry_run()
