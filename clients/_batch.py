"""Batch evaluation: every (task, fault mode, trial) as a real MCP episode, concurrently, resumable.

`BatchRunner` assembles a run from its parts: planning (`_batch_plan`), playing an episode
(`_episode_runner`), scoring it and writing its row (`_batch_rows`), and an executor that spreads the work.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from occusim.analysis import Combination, ResultRow, RowStatus, RunConfig, RunDir, RunError
from occusim.environments import Catalog, Task, Usage
from occusim.llm import ModelConfig, UsageLedger
from occusim.server import Store

from ._batch_plan import DryRun, Selection, plan, select
from ._batch_rows import Scorer
from ._budget import CostBudget
from ._cost_estimate import estimate_cost
from ._episode_runner import EpisodeRunner, InfraError, describe, infra_failure
from ._executor import Executor, WorkPlan
from ._local_executor import LocalExecutor
from ._process_executor import ProcessExecutor
from ._replay_agent import REPLAY_AGENT
from ._setup_errors import configuration_setting
from ._transports import EpisodeTransport, HttpTransport, InProcessTransport, StdioTransport
from ._worker_spec import WorkerSpec, forwarded_environment

log = logging.getLogger("occusim.clients")

__all__ = ["BatchRunner", "BatchSummary", "DryRun", "InfraError", "plan_batch", "run_batch", "worker_runner"]


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
        self.selection: Selection | None = None
        self.episodes: EpisodeRunner | None = None
        self.scorer: Scorer | None = None
        self._write_lock = asyncio.Lock()
        self._agent_model = (
            None if config.agent_model == REPLAY_AGENT else ModelConfig.for_role("agent", model=config.agent_model)
        )

    def prepare(self) -> list[Task]:
        """Load the catalog and the run's protocol (OccuBench's harness under --protocol occubench); the tasks
        the run selects."""
        self.selection = select(self.config, self.catalog)
        self.catalog = self.selection.catalog
        self.scorer = Scorer(self.config, self.selection, None)
        return self.selection.tasks

    def plan(self) -> tuple[list[Combination], list[Combination]]:
        """Every combination of the run and those still to run (a resumed run skips the finished ones)."""
        self.prepare()
        assert self.selection is not None
        self.config, every, work = plan(self.config, self.selection, self.folder)
        return every, work

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
                work_plan = WorkPlan(work, record=lambda row: self._record(row, progress), lost_row=self._lost_row,
                                     retries=config.infra_retries, budget=budget)
                await self._execute(work_plan)
            summary.new_rows = work_plan.rows
            summary.unscheduled = work_plan.unscheduled
            summary.stopped_by = work_plan.stopped_by
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
        selection = self.selection
        assert selection is not None
        if not self.config.cache:
            from occusim.llm import set_default_cache

            set_default_cache(None)
        async with Store(db) as store:
            transport = await self._open_transport(selection, store)
            self.episodes = EpisodeRunner(self.config, selection, transport, store, self._agent_model)
            self.scorer = Scorer(self.config, selection, store)
            try:
                yield self
            finally:
                await transport.close()

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

    def _row(self, combo: Combination, *, status: RowStatus, attempts: int, usage: dict[str, Usage],
             duration: float, error: str | None = None, configuration_error: str | None = None) -> ResultRow:
        assert self.scorer is not None
        return self.scorer.row(combo, status=status, attempts=attempts, usage=usage, duration=duration, error=error,
                               configuration_error=configuration_error)

    async def _open_transport(self, selection: Selection, store: Store) -> EpisodeTransport:
        config, protocol = self.config, selection.protocol
        # A stuck MCP read must not outlive the episode's own timeout.
        read_timeout = config.episode_timeout
        mode = protocol.episode_mode(config.mode)
        if config.transport == "stdio":
            return StdioTransport(db=store.url, world_model=config.world_model, sources=config.sources,
                                  protocol=protocol, mode=mode, cache=config.cache, read_timeout=read_timeout)
        if config.transport == "http":
            return await HttpTransport(selection.catalog, store, world_model=config.world_model, protocol=protocol,
                                       mode=mode, read_timeout=read_timeout, sources=config.sources).start()
        return InProcessTransport(selection.catalog, store, world_model=config.world_model, protocol=protocol,
                                  mode=mode, read_timeout=read_timeout)

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

    async def _episode(self, combo: Combination, attempt: int, spent: UsageLedger, started: float) -> ResultRow:
        """Play one episode, score it, and build its row."""
        assert self.episodes is not None and self.scorer is not None
        played = await self.episodes.play(combo, spent)
        verdict = await self.scorer.score(combo, played, spent)
        return self.scorer.row(
            combo, status="unjudged" if verdict.unjudged else "ok", attempts=attempt, usage=spent.by_role,
            duration=time.perf_counter() - started, record=played.record, run=played.run, verdict=verdict,
        )


@asynccontextmanager
async def worker_runner(spec_json: str) -> AsyncIterator[BatchRunner]:
    """A worker's runner (a worker process or a Ray actor): the driver's settings, store and catalog sources."""
    spec = WorkerSpec.model_validate_json(spec_json)
    runner = BatchRunner(spec.config, spec.out, show_progress=False)
    runner.prepare()
    async with runner.session(spec.db) as opened:
        yield opened


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
    configuration or folder, and the protocol's own loading error (an OccusimError: HarnessError when
    OccuBench's harness is missing).
    """
    return await BatchRunner(config, out, catalog=catalog, show_progress=show_progress).run()


def plan_batch(config: RunConfig, out: str | Path, *, catalog: Catalog | None = None) -> DryRun:
    """What `run_batch` would run into `out` and what it would cost (`occusim run --dry-run`); runs nothing.

    Raises RunError for an unusable configuration or folder, as `run_batch` would.
    """
    return BatchRunner(config, out, catalog=catalog, show_progress=False).dry_run()
