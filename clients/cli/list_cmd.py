"""`occusim list`: tables of the loaded scenarios and, with --tasks, their tasks, reference lengths and gates."""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING

from ._catalog_options import add_catalog_options, load_catalog_from, report_catalog_problems

if TYPE_CHECKING:
    from occusim.environments import Catalog, Scenario

DESCRIPTION = """\
List the scenarios of the bundled catalog and of any --source (id, category, occupation, number of
tools and tasks), then how many scenarios and tasks each category has. --tasks lists every task too (id,
difficulty, the number of steps of its reference solution, whether it passes the discrimination gates of
`occusim validate --discrimination` or which gates it fails, title). --format markdown prints the
per-category table as Markdown instead, with the reference lengths (median and longest, and how many
have 12 or more steps) and how many tasks pass the gates (the README's catalog table is this output).
"""

EPILOG = """\
examples:
  occusim list
  occusim list --category healthcare-life-sciences --tasks
  occusim list --source occubench:path/to/OccuBench --no-bundled
  occusim list --format markdown > catalog.md
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--category", metavar="C", help="only this category, by name or slug")
    add_catalog_options(parser)
    parser.add_argument("--tasks", action="store_true", help="also list every task")
    parser.add_argument(
        "--format",
        choices=["table", "markdown"],
        default="table",
        help="table (default): tables of scenarios, categories and tasks; markdown: the per-category table",
    )


def category_rows(scenarios: Iterable[Scenario]) -> list[tuple[str, list[Scenario]]]:
    """The categories in their canonical order, each with its scenarios; empty categories left out."""
    from occusim.environments import CATEGORIES

    by_category: dict[str, list[Scenario]] = {category: [] for category in CATEGORIES}
    for scenario in scenarios:
        by_category.setdefault(scenario.category, []).append(scenario)
    return [(category, found) for category, found in by_category.items() if found]


GATES_PASSED = "pass"
# The reference length from which a task counts as long in the catalog table.
LONG_REFERENCE = 12


def task_gates(catalog: Catalog, scenarios: Iterable[Scenario]) -> dict[str, str]:
    """Each task's standing under the discrimination gates: `pass`, the gates it fails, or why it has none."""
    from occusim.environments import OccusimError
    from occusim.judge import discriminate_task

    standing = {}
    for scenario in scenarios:
        for task in scenario.tasks:
            try:
                gates = discriminate_task(scenario, task, catalog.initial_state(task))
            except OccusimError as error:  # a reference that does not replay: `occusim validate` says where
                standing[task.id] = f"error: {error}"
                continue
            if not gates.gateable:
                standing[task.id] = "no reference"
            else:
                failed = sorted({failure.gate for failure in gates.failures})
                standing[task.id] = ", ".join(failed) if failed else GATES_PASSED
    return standing


def _steps_cell(scenarios: Iterable[Scenario]) -> str:
    """The reference solutions' lengths: `median (longest)`."""
    lengths = [len(task.reference_solution) for s in scenarios for task in s.tasks]
    return f"{statistics.median(lengths):g} ({max(lengths)})" if lengths else "n/a"


def catalog_markdown(scenarios: Iterable[Scenario], gates: dict[str, str]) -> str:
    """A Markdown table: per category, its scenarios, tasks, reference lengths, long references, tasks passing the
    gates and occupations, then the totals."""
    rows = category_rows(scenarios)
    lines = [f"| category | scenarios | tasks | reference steps: median (longest) | with {LONG_REFERENCE}+ steps "
             "| pass the gates | occupations |", "|---|---:|---:|---:|---:|---:|---|"]

    def cells(found: list[Scenario]) -> list[object]:
        tasks = [task for s in found for task in s.tasks]
        return [len(found), len(tasks), _steps_cell(found),
                sum(len(task.reference_solution) >= LONG_REFERENCE for task in tasks),
                sum(gates.get(task.id) == GATES_PASSED for task in tasks)]

    for category, found in rows:
        occupations = ", ".join(sorted(s.occupation for s in found)).replace("|", "\\|")
        lines.append(f"| {category} | " + " | ".join(map(str, cells(found))) + f" | {occupations} |")
    total = [s for _, found in rows for s in found]
    lines.append("| **all** | " + " | ".join(f"**{cell}**" for cell in cells(total)) + " | |")
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from occusim.environments import CATEGORIES, ScenarioErrors, category_slug

    wanted = None
    if args.category:
        wanted = category_slug(args.category)
        if wanted not in {category_slug(c) for c in CATEGORIES}:
            slugs = ", ".join(category_slug(c) for c in CATEGORIES)
            print(f"occusim list: unknown category {args.category!r}; choose from: {slugs}", file=sys.stderr)
            return 2
    try:
        catalog = load_catalog_from(args)
    except ScenarioErrors as error:
        return report_catalog_problems("list", error.errors)
    scenarios = [
        s for s in catalog.scenarios.values() if wanted is None or category_slug(s.category) == wanted
    ]

    if args.format == "markdown":
        print(catalog_markdown(scenarios, task_gates(catalog, scenarios)), end="")
        return 0
    console = Console()
    table = Table(title=f"{len(scenarios)} scenarios, {sum(len(s.tasks) for s in scenarios)} tasks")
    table.add_column("scenario", no_wrap=True)
    table.add_column("category")
    table.add_column("occupation")
    table.add_column("tools", justify="right")
    table.add_column("tasks", justify="right")
    for scenario in scenarios:
        table.add_row(
            scenario.id,
            scenario.category,
            scenario.occupation,
            str(len(scenario.tools)),
            str(len(scenario.tasks)),
        )
    console.print(table)
    categories = Table(title="per category")
    categories.add_column("category")
    categories.add_column("scenarios", justify="right")
    categories.add_column("tasks", justify="right")
    for category, found in category_rows(scenarios):
        categories.add_row(category, str(len(found)), str(sum(len(s.tasks) for s in found)))
    console.print(categories)
    if args.tasks:
        gates = task_gates(catalog, scenarios)
        tasks = Table(title="tasks")
        tasks.add_column("task", no_wrap=True)
        tasks.add_column("difficulty", justify="right")
        tasks.add_column("steps", justify="right")
        tasks.add_column("gates")
        tasks.add_column("title")
        for scenario in scenarios:
            for task in scenario.tasks:
                tasks.add_row(task.id, str(task.difficulty), str(len(task.reference_solution)), gates[task.id],
                              task.title)
        console.print(tasks)
    return 0
