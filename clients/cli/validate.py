"""`occusim validate`: check scenario files and print every problem as `file: json.path: message`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ._catalog_options import add_catalog_options

if TYPE_CHECKING:
    from occusim.environments import Catalog

DESCRIPTION = """\
Check scenario sources: the file format, every tool's JSON Schemas, the reference solutions (tools,
arguments, observations, state patches), rubric pointers and tool names, state descriptions, and the
rubric on each task's initial state (guards must hold there; no other state item may already be true).

With no PATH and no --source, the bundled catalog is checked. Otherwise only the given sources are,
unless --with-bundled is passed (which also catches id clashes with the bundled catalog).
Every problem is printed on stdout, one per line, followed by a one-line summary; the exit status is 1
when there is any problem.

--discrimination also scores baseline agents derived from each reference solution (do nothing, only
the reads, each write left out, each write's values perturbed, independent writes reordered, each near
miss's answer) with the judge's checks and applies the gates: no baseline passes, doing nothing and
reading only score 0, every write is guarded by an item (or declared optional), reordering independent
writes still passes, and every task has a critical item. The per-task table is printed (and written to
--out); the exit status is 1 when a gate fails.
"""

EPILOG = """\
examples:
  occusim validate
  occusim validate environments/catalog/healthcare-life-sciences/
  occusim validate my-scenarios/ --with-bundled
  occusim validate --source occubench:path/to/OccuBench
  occusim validate --discrimination --format json --out gates.json
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", metavar="PATH", help="scenario YAML files or folders of them")
    add_catalog_options(parser, bundled_flag=False)
    parser.add_argument(
        "--with-bundled",
        action="store_true",
        help="check the given sources together with the bundled catalog",
    )
    parser.add_argument(
        "--discrimination",
        action="store_true",
        help="score baselines derived from each reference solution and apply the discrimination gates",
    )
    parser.add_argument(
        "--format",
        choices=("markdown", "json"),
        default="markdown",
        help="how --discrimination prints (and writes) its report (default: markdown)",
    )
    parser.add_argument("--out", type=Path, help="also write the --discrimination report to this file")


def run(args: argparse.Namespace) -> int:
    from occusim.environments import validate_sources
    from occusim.judge import audit_catalog_rubrics

    sources = [*args.paths, *args.source]
    report = validate_sources(sources, bundled=args.with_bundled or not sources)
    report.errors.extend(audit_catalog_rubrics(report.catalog))
    # With --format json, stdout carries the gates' JSON alone.
    stream = sys.stderr if args.discrimination and args.format == "json" else sys.stdout
    for error in report.errors:
        print(error, file=stream)
    print(report.summary(), file=stream)
    if not args.discrimination:
        return 0 if report.ok else 1
    return _discrimination(report.catalog, args) if report.ok else 1


def _discrimination(catalog: Catalog, args: argparse.Namespace) -> int:
    from occusim.judge import discriminate_catalog, render_markdown

    gates = discriminate_catalog(catalog)
    text = gates.model_dump_json(indent=2) + "\n" if args.format == "json" else render_markdown(gates)
    print(text, end="")
    if args.out is not None:
        args.out.write_text(text, encoding="utf-8")
    if args.format == "json":
        print(gates.summary(), file=sys.stderr)  # stdout stays parseable JSON

    return 0 if gates.ok else 1
