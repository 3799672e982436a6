"""`occusim list`: tables of the loaded scenarios and, with --tasks, their tasks."""

from __future__ import annotations

import argparse
import sys

from ._catalog_options import add_catalog_options, load_catalog_from, report_catalog_problems

DESCRIPTION = """\
List the scenarios of the bundled catalog and of any --source (id, category, occupation, number of
tools and tasks). --tasks lists every task too (id, difficulty, title).
"""

EPILOG = """\
examples:
  occusim list
  occusim list --category healthcare-life-sciences --tasks
  occusim list --source occubench:path/to/OccuBench --no-bundled
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--category", metavar="C", help="only this category, by name or slug")
    add_catalog_options(parser)
    parser.add_argument("--tasks", action="store_true", help="also list every task")


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
    if args.tasks:
        tasks = Table(title="tasks")
        tasks.add_column("task", no_wrap=True)
        tasks.add_column("difficulty", justify="right")
        tasks.add_column("title")
        for scenario in scenarios:
            for task in scenario.tasks:
                tasks.add_row(task.id, str(task.difficulty), task.title)
        console.print(tasks)
    return 0
