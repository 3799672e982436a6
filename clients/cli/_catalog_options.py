"""The `--source`, `--no-bundled` and `--tasks` options shared by the commands that load the catalog."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from occusim.environments import Catalog


def add_catalog_options(parser: argparse.ArgumentParser | Any, *, bundled_flag: bool = True) -> None:
    """Add `--source SPEC` (repeatable) and, unless the command always uses the bundled catalog, `--no-bundled`."""
    parser.add_argument(
        "--source",
        action="append",
        default=[],
        metavar="SPEC",
        help="also load a scenario file, a folder of them, or occubench:DIR (repeatable)",
    )
    if bundled_flag:
        parser.add_argument("--no-bundled", action="store_true", help="leave out the bundled catalog")


def add_task_option(parser: argparse.ArgumentParser | Any) -> None:
    """Add `--tasks SELECTOR`: task-id globs, scenario ids or category slugs (Catalog.select)."""
    parser.add_argument("--tasks", default="all", metavar="SELECTOR",
                        help="comma-separated task-id globs, scenario ids or category slugs (default all)")


def add_exemplar_option(parser: argparse.ArgumentParser | Any) -> None:
    """Add `--exemplars DIR`: judge exemplar files merged into their tasks' rubrics."""
    parser.add_argument(
        "--exemplars",
        metavar="DIR",
        help="also show the judge the exemplars in DIR (one YAML file per task, as --write-exemplars of "
        "judge-agreement writes them)",
    )


def load_catalog_from(args: argparse.Namespace) -> Catalog:
    """The catalog the options name, with any --exemplars merged in; raises ScenarioErrors listing every
    problem in every source."""
    from occusim.environments import add_exemplars, load_catalog

    catalog = load_catalog(args.source, bundled=not getattr(args, "no_bundled", False))
    if getattr(args, "exemplars", None):
        add_exemplars(catalog, args.exemplars)
    return catalog


def report_catalog_problems(command: str, problems: Sequence[object]) -> int:
    """Print every problem of the sources on stderr, then what to do; returns the exit status 1."""
    for problem in problems:
        print(problem, file=sys.stderr)
    print(f"occusim {command}: fix these problems (or run `occusim validate`) and retry", file=sys.stderr)
    return 1
