"""`--workers N`: the combinations spread over N worker processes on this machine, sharing one store.

Workers are forked from a server process that imported occusim once (multiprocessing's forkserver, where
the platform has one; spawned afresh elsewhere), so N workers do not pay N start-ups; `start_worker_server`
launches that server at once, and it imports while the driver does.

The driver hands each worker at most its share of `--concurrency` combinations at a time and hands it
another as each row comes back, so it always knows what a worker holds: a worker that dies has its
combinations handed out again (see `WorkPlan.lost`) and is replaced. Workers never touch results.jsonl.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import multiprocessing.connection
import os
import threading
import time
from dataclasses import dataclass, field
from multiprocessing.process import BaseProcess
from typing import Any, cast

from occusim.analysis import Combination, RunError

from ._executor import RunnerFactory, WorkPlan
from ._worker_spec import WorkerReport, WorkerSpec

log = logging.getLogger("occusim.clients")

# How often the driver looks for dead workers while no row arrives, in seconds.
_POLL = 0.5
# Fresh processes started in place of dead ones, over the whole run, before the run gives up.
_MAX_REPLACEMENTS = 8
# What a worker imports, loaded once in the fork server instead of in every worker.
WORKER_MODULES = ["occusim.clients._batch", "occusim.clients._native_protocol", "occusim.clients._agent",
                  "aiohttp", "jsonschema"]


def worker_context() -> multiprocessing.context.SpawnContext | multiprocessing.context.ForkServerContext:
    """The fork server context with the worker modules preloaded, or spawn where there is no fork server."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(WORKER_MODULES)
    return context


def start_worker_server() -> None:
    """Launch the fork server now (it returns at once and imports in the background), so that its imports
    overlap the driver's own; the first worker started otherwise launches it."""
    if worker_context().get_start_method() == "forkserver":
        from multiprocessing import forkserver

        forkserver.ensure_running()


def stop_worker_server() -> None:
    """Stop the fork server and wait for it, so that its CPU time and its workers' counts as this process's
    own children's (what `time` and wait4 report) and no server outlives the run."""
    from multiprocessing import forkserver

    # CPython's own way to stop it (its tests use it); without it the server exits when this process does.
    stop = getattr(forkserver._forkserver, "_stop", None)
    if stop is not None:
        stop()


def shares(total: int, parts: int) -> list[int]:
    """`total` split into `parts` near-equal positive shares (fewer parts when total is smaller)."""
    parts = max(1, min(parts, total))
    return [total // parts + (1 if index < total % parts else 0) for index in range(parts)]


@dataclass
class _Worker:
    index: int
    capacity: int
    process: BaseProcess | None = None
    inbox: Any = None
    # The read end of this worker's own pipe for its reports. Each worker writes to a pipe of its own: a
    # worker killed while writing to a queue shared by all of them would keep that queue's lock forever.
    outbox: multiprocessing.connection.Connection | None = None
    assigned: dict[tuple[str, str, int], Combination] = field(default_factory=dict)
    stopping: bool = False


class ProcessExecutor:
    """Runs a plan over `workers` processes, each an asyncio loop running its share of `concurrency`."""

    def __init__(self, factory: RunnerFactory, spec: WorkerSpec, *, workers: int, concurrency: int) -> None:
        self.factory = factory
        self.spec_json = spec.model_dump_json()
        self.workers = workers
        self.concurrency = concurrency
        self._context = worker_context()
        self._replacements = 0

    async def run(self, plan: WorkPlan) -> None:
        workers = [_Worker(index, capacity)
                   for index, capacity in enumerate(shares(self.concurrency, min(self.workers, plan.total)))]
        try:
            for worker in workers:
                self._start(worker)
            self._fill(workers, plan)
            while not plan.finished:
                for message in await asyncio.to_thread(_receive, workers):
                    await self._handle(WorkerReport.model_validate_json(message), workers, plan)
                await self._replace_dead(workers, plan)
                self._fill(workers, plan)
        finally:
            await asyncio.to_thread(self._stop, workers)
            if self._context.get_start_method() == "forkserver":
                stop_worker_server()

    def _start(self, worker: _Worker) -> None:
        worker.inbox = self._context.Queue()
        worker.assigned.clear()
        if worker.outbox is not None:
            worker.outbox.close()
        reader, writer = self._context.Pipe(duplex=False)
        worker.outbox = reader
        worker.process = self._context.Process(
            target=_worker_main, args=(self.factory, self.spec_json, worker.index, worker.inbox, writer),
            name=f"occusim-worker-{worker.index}", daemon=True,
        )
        worker.process.start()
        writer.close()  # the worker holds the only write end: its death reads as the pipe's end here

    def _fill(self, workers: list[_Worker], plan: WorkPlan) -> None:
        for worker in workers:
            while len(worker.assigned) < worker.capacity and (combo := plan.take()) is not None:
                worker.assigned[combo.key] = combo
                worker.inbox.put(combo.model_dump_json())

    async def _handle(self, report: WorkerReport, workers: list[_Worker], plan: WorkPlan) -> None:
        worker = workers[report.worker]
        if report.error is not None:
            raise RunError(f"worker process {report.worker} stopped: {report.error}")
        if report.row is not None:
            worker.assigned.pop(report.row.key, None)
            await plan.finish(report.row)

    async def _replace_dead(self, workers: list[_Worker], plan: WorkPlan) -> None:
        for worker in workers:
            process = worker.process
            if process is None or process.exitcode is None:
                continue
            why = f"worker process {worker.index} (pid {process.pid}) exited with code {process.exitcode}"
            log.warning("%s while running %d episode(s)", why, len(worker.assigned))
            lost = list(worker.assigned.values())
            worker.assigned.clear()
            for combo in lost:
                await plan.lost(combo, why)
            if self._replacements >= _MAX_REPLACEMENTS:
                raise RunError(f"{why}; {_MAX_REPLACEMENTS} worker processes were replaced already, so the run "
                               "stops (the rows written so far are kept: run again to resume)")
            self._replacements += 1
            self._start(worker)

    def _stop(self, workers: list[_Worker]) -> None:
        """Ask every worker to finish, then end those that do not within a few seconds."""
        for worker in workers:
            if worker.process is not None and worker.process.is_alive():
                worker.inbox.put(None)
        for worker in workers:
            if worker.process is None:
                continue
            worker.process.join(timeout=10)
            if worker.process.is_alive():
                worker.process.terminate()
                worker.process.join(timeout=5)
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join()
            if worker.outbox is not None:
                worker.outbox.close()
                worker.outbox = None


def _receive(workers: list[_Worker]) -> list[bytes]:
    """The reports that arrive within _POLL seconds. A pipe whose worker died (or died while writing a report,
    leaving half of it) is dropped here; the worker is replaced when its exit is seen."""
    readers = {worker.outbox: worker for worker in workers if worker.outbox is not None}
    if not readers:
        time.sleep(_POLL)
        return []
    messages = []
    for ready in multiprocessing.connection.wait(list(readers), timeout=_POLL):
        connection = cast(multiprocessing.connection.Connection, ready)
        try:
            messages.append(connection.recv_bytes())
        except (EOFError, OSError):
            readers[connection].outbox = None
            connection.close()
    return messages


def _worker_main(factory: RunnerFactory, spec_json: str, index: int, inbox: Any, outbox: Any) -> None:
    """A worker process: run every combination the driver sends, at once, until it sends None."""
    _exit_with_parent()
    # Forked from a server started earlier: the driver's variables replace the server's, removed ones too.
    WorkerSpec.model_validate_json(spec_json).apply(exact=True)
    asyncio.run(_serve(factory, spec_json, index, inbox, outbox))


async def _serve(factory: RunnerFactory, spec_json: str, index: int, inbox: Any, outbox: Any) -> None:
    try:
        async with factory(spec_json) as runner:

            async def one(combo: Combination) -> None:
                row = await runner.run_combination(combo)
                outbox.send_bytes(WorkerReport(worker=index, row=row).model_dump_json().encode())

            async with asyncio.TaskGroup() as group:
                while (message := await asyncio.to_thread(inbox.get)) is not None:
                    group.create_task(one(Combination.model_validate_json(message)))
    except Exception as error:  # reported to the driver, which stops the run with it
        report = WorkerReport(worker=index, error=f"{type(error).__name__}: {error}")
        outbox.send_bytes(report.model_dump_json().encode())


def _exit_with_parent() -> None:
    """End this process when the driver dies (killed, say), so that no orphan keeps running episodes."""
    parent = multiprocessing.parent_process()
    if parent is None:
        return

    def watch() -> None:
        multiprocessing.connection.wait([parent.sentinel])
        os._exit(3)

    threading.Thread(target=watch, name="occusim-parent-watch", daemon=True).start()
