"""`occusim validate`: check scenario files and print every problem as `file: json.path: message`."""

from __future__ import annotations

import argparse

from ._catalog_options import add_catalog_options

DESCRIPTION = """\
Check scenario sources: the file format, every tool's JSON Schemas, the reference solutions (tools,
arguments, observations, state patches), rubric pointers and tool names, and state descriptions.

With no PATH and no --source, the bundled catalog is checked. Otherwise only the given sources are,
unless --with-bundled is passed (which also catches id clashes with the bundled catalog).
Every problem is printed on stdout, one per line, followed by a one-line summary; the exit status is 1
when there is any problem.
"""

EPILOG = """\
examples:
  occusim validate
  occusim validate environments/catalog/healthcare-life-sciences/
  occusim validate my-scenarios/ --with-bundled
  occusim validate --source occubench:path/to/OccuBench
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", metavar="PATH", help="scenario YAML files or folders of them")
    add_catalog_options(parser, bundled_flag=False)
    parser.add_argument(
        "--with-bundled",
        action="store_true",
        help="check the given sources together with the bundled catalog",
    )


def run(args: argparse.Namespace) -> int:
    from occusim.environments import validate_sources

    sources = [*args.paths, *args.source]
    report = validate_sources(sources, bundled=args.with_bundled or not sources)
    for error in report.errors:
        print(error)
    print(report.summary())
    return 0 if report.ok else 1
