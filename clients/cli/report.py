"""`occusim report`: tables and plots for a run folder, as Markdown or one self-contained HTML file."""

from __future__ import annotations

import argparse
import sys

DESCRIPTION = """\
Summarise a run folder written by `occusim run`: completion overall, by category, difficulty and fault
mode, OccuBench robustness, pass@k and pass^k, tokens and cost by role, simulator and infrastructure
errors, with plots of completion by category and of the degradation across E0-E3.

Markdown goes to stdout unless --out is given (then the plots are written as PNG files beside it).
HTML is one self-contained file (inline CSS, plots embedded), written to --out or stdout.
"""

EPILOG = """\
examples:
  occusim report runs/gpt41mini
  occusim report runs/gpt41mini --format html --out runs/gpt41mini/report.html
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", metavar="RUN_DIR", help="the --out folder of `occusim run`")
    parser.add_argument("--format", choices=["md", "html"], default="md", help="md (default) or html")
    parser.add_argument("--out", metavar="FILE", help="write here instead of stdout")


def run(args: argparse.Namespace) -> int:
    from occusim.clients import RunError, write_report

    try:
        text = write_report(args.run_dir, format=args.format, out=args.out)
    except (RunError, OSError) as error:
        print(f"occusim report: {error}", file=sys.stderr)
        return 2
    if args.out:
        print(f"occusim report: wrote {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0
