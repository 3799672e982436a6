"""`occusim report`: tables and plots for a run folder, as Markdown or one self-contained HTML file."""

from __future__ import annotations

import argparse
import sys

DESCRIPTION = """\
Summarise a run folder written by `occusim run`: completion overall, by fault mode, by category x fault
mode and by difficulty, each with a 95 % interval (a bootstrap over tasks); OccuBench robustness over the
tasks scored in every mode (with how many, labelled partial when E1, E2 or E3 is missing); pass@k and
pass^k; judge abstentions and ties; faults met per episode; tokens and cost by role; simulator errors;
unjudged and infrastructure-error episodes apart; every episode, its id linked to its page in the viewer
(`occusim view RUN_DIR` serves RUN_DIR/report.html at /report, where the links open); the run's provenance. Plots: completion by category and
fault mode, and the degradation across E0-E3. docs/metrics.md gives every formula; to compare two runs,
see `occusim compare`.

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
    from occusim.analysis import RunError, write_report

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
