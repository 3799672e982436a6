"""`occusim simcheck`: how faithful a world model is, measured against the golden steps of the reference solutions."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from ._catalog_options import add_catalog_options, add_task_option, load_catalog_from, report_catalog_problems

if TYPE_CHECKING:
    from occusim.clients import CheckedStep, SimcheckReport

DESCRIPTION = """\
Measure how faithfully a world model simulates the scenarios (bundled, or --source files whose tasks have
reference solutions), to choose one for an evaluation.

Every reference call of the selected tasks is simulated by --world-model in tracked mode, without faults,
each from the golden state before it (the golden patches move the state along, so one error does not
spoil the next step), and the simulated step is scored against the golden one:

  valid       an answer passed the world model's validation (1st try: without a repair)
  grounded    every id or name it shows is in the state, an earlier observation, the call or the golden answer
  complete    it omits no entity the golden observation lists
  values      fields read from the state agree with the golden observation
  invented    no key that neither the golden observation nor the tool's output schema has
  patch       a writing tool changes the state as the golden patch does (paths and values)
  read-only   a read-only tool changes nothing
  faithful    valid and passing every check

It prints a table by scenario and by tool; --out DIR writes simcheck.md, simcheck.html and simcheck.json
(every step, with what differed). Each figure has a 95 % interval (bootstrap over tasks); docs/metrics.md
defines them. --selftest instead measures the per-step audit on its labelled set of mutated golden steps.
"""

EPILOG = """\
examples:
  occusim simcheck --world-model openai/gpt-4.1 --out simcheck/gpt41
  occusim simcheck --world-model openai/gpt-4.1-mini --tasks healthcare-life-sciences --concurrency 8
  occusim simcheck --world-model anthropic/claude-sonnet-4-5 --tasks 'emergency-dispatcher/*' --out sc/sonnet
  occusim simcheck --selftest
"""

_RECALL_TARGET, _FALSE_ALARM_LIMIT = 0.95, 0.05


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--world-model", metavar="MODEL",
                        help="the litellm model string to check (default: OCCUSIM_WORLD_MODEL_MODEL, then OCCUSIM_MODEL)")
    add_task_option(parser)
    add_catalog_options(parser)
    parser.add_argument("--out", metavar="DIR", help="write simcheck.md, simcheck.html and simcheck.json here")
    parser.add_argument("--concurrency", type=int, default=4, metavar="N", help="calls at once (default 4)")
    parser.add_argument("--seed", type=int, default=0, metavar="S", help="seed sent with every call (default 0)")
    parser.add_argument("--no-cache", action="store_true", help="do not reuse cached model responses")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--selftest", action="store_true",
                        help="measure the per-step audit instead (recall on mutated steps, false alarms on golden ones)")
    parser.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error"],
                        help="log detail on stderr (default warning)")


def _selftest() -> int:
    from occusim.server import run_audit_selftest

    result = run_audit_selftest(seed=0)
    print(f"recall: {100 * result.recall:.1f} %")
    print(f"false alarms: {100 * result.false_alarm_rate:.1f} %")
    return 0 if result.recall >= _RECALL_TARGET and result.false_alarm_rate <= _FALSE_ALARM_LIMIT else 1


@contextlib.contextmanager
def _progress(total: int, *, enabled: bool) -> Iterator[Callable[[CheckedStep], None]]:
    """A progress bar on stderr counting the faithful steps so far; silent when disabled."""
    if not enabled:
        yield lambda step: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    done = {"faithful": 0, "invalid": 0, "unavailable": 0}
    with Progress(TextColumn("[bold]steps"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.description}"),
                  TimeElapsedColumn(), console=Console(stderr=True), transient=True) as progress:
        bar = progress.add_task("", total=total)

        def advance(step: CheckedStep) -> None:
            if step.fidelity is not None:
                done["faithful"] += step.fidelity.faithful
            else:
                done[step.status] += 1
            progress.update(bar, advance=1, description="  ".join(f"{name} {count}" for name, count in done.items()))

        yield advance


def _print_tables(report: SimcheckReport) -> None:
    from rich.console import Console
    from rich.table import Table

    from occusim.clients._simcheck_report import FIGURE_HEADERS, figure_cells

    console = Console()
    if not console.is_terminal:
        console = Console(width=220)  # a file or a pipe: keep every row on one line
    for title, label, groups in (("by scenario", "Scenario", [*report.by_scenario, report.overall]),
                                 ("by tool", "Tool", report.by_tool)):
        table = Table(title=f"{report.world_model}: fidelity {title}", title_justify="left",
                      caption="share of the steps each check applies to (count/total); docs/metrics.md",
                      caption_justify="left")
        table.add_column(label, no_wrap=True)
        for header in FIGURE_HEADERS:
            table.add_column(header, justify="right")
        for figures in groups:
            table.add_row(figures.group, *figure_cells(figures, compact=True))
        console.print(table)


async def run(args: argparse.Namespace) -> int:
    if args.selftest:
        return _selftest()
    logging.basicConfig(stream=sys.stderr, level=args.log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if args.concurrency < 1:
        print(f"occusim simcheck: --concurrency must be at least 1, got {args.concurrency}", file=sys.stderr)
        return 2
    from occusim.clients import SimcheckError, run_simcheck, select_checkable, write_simcheck
    from occusim.clients._simcheck_report import share_cell
    from occusim.clients.cli.serve import load_scripted_models
    from occusim.environments import ScenarioErrors
    from occusim.llm import ModelConfig, set_default_cache
    from occusim.server import WorldModel

    try:
        load_scripted_models(os.environ.get("OCCUSIM_SCRIPTED_MODELS", ""))
        catalog = load_catalog_from(args)
        tasks = select_checkable(catalog, args.tasks)
        model = ModelConfig.for_role("world_model", model=args.world_model)
    except ScenarioErrors as error:
        return report_catalog_problems("simcheck", error.errors)
    except (SimcheckError, ValueError, ImportError, OSError) as error:
        print(f"occusim simcheck: {error}", file=sys.stderr)
        return 2
    if args.no_cache:
        set_default_cache(None)
    with _progress(sum(len(task.reference_solution) for task in tasks), enabled=not args.no_progress) as advance:
        report = await run_simcheck(catalog, tasks, WorldModel(model), selection=args.tasks,
                                    concurrency=args.concurrency, seed=args.seed, on_step=advance)
    overall = report.overall
    if overall.unavailable == overall.steps:
        first = next((step.error for step in report.steps if step.error), "")
        print(f"occusim simcheck: the world model {model.model} answered no step: {first}", file=sys.stderr)
        return 1
    _print_tables(report)
    print(f"occusim simcheck: {overall.steps} steps of {report.task_count} task(s); faithful "
          f"{share_cell(overall.faithful)}" + (f"; {overall.unavailable} step(s) left out, the provider could "
                                               "not be reached" if overall.unavailable else ""))
    if args.out:
        for path in write_simcheck(report, args.out):
            print(f"  wrote {path}")
    return 0
