"""`occusim compare`: two runs compared pairwise, or the agreement of world models over runs of the same agents."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from occusim.analysis import Report, ResultRow, RunComparison, RunConfig

DESCRIPTION = """\
Compare run folders written by `occusim run`.

Two runs RUN_A and RUN_B under one world model (typically two agents on the same tasks and fault modes):
a paired comparison. Only the (task, fault mode) pairs scored in both runs count; pairs scored in one run only (not
run, an infrastructure error, or unjudged) are dropped and counted. For each fault mode, and for all
modes together, it prints completion in A and in B over those pairs, the difference A - B, its 95 %
interval (a paired bootstrap over tasks: a resampled task brings its outcomes in both runs) and the
p-value of a two-sided sign-flip permutation test on the per-task differences (exact when at most 16
tasks differ; with one trial per task it is the exact McNemar test). A pair's outcome is the share of its
scored trials that passed. Settings other than the agent that differ between the runs (world model,
judge, protocol, prompt versions, ...) are listed, since they also explain a difference.

Runs of the same agents under two or more world models (one run per agent and world model): the
cross-simulator agreement of OccuBench. For each pair of world models, overall and per category: rank
agreement (the share of agent pairs that both world models order the same way by completion), outcome
agreement (the share of (agent, task, fault mode) outcomes, pass or fail, that are the same) and Cohen's
kappa of those outcomes (agreement beyond chance).

docs/metrics.md gives every formula.
"""

EPILOG = """\
examples:
  occusim compare runs/gpt41mini runs/gpt41
  occusim compare runs/gpt41mini runs/gpt41 --format json > comparison.json
  occusim compare runs/*-under-gpt41 runs/*-under-sonnet --format html --out agreement.html
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("runs", nargs="+", metavar="RUN_DIR",
                        help="the --out folders of `occusim run`: two for a paired comparison (A, then B), or runs "
                             "of the same agents under several world models")
    parser.add_argument("--format", choices=["md", "html", "json"], default="md",
                        help="md (Markdown, default), html (one self-contained page) or json (every figure)")
    parser.add_argument("--out", metavar="FILE", help="write here instead of stdout")


def _paired(runs: list[tuple[str, RunConfig, list[ResultRow]]]) -> tuple[RunComparison, Report]:
    from occusim.analysis import compare_rows, paired_report

    (name_a, config_a, rows_a), (name_b, config_b, rows_b) = runs
    comparison = compare_rows(config_a, rows_a, config_b, rows_b, run_a=name_a, run_b=name_b)
    if not comparison.pairs:
        raise ValueError(f"no (task, fault mode) pair was scored in both runs ({comparison.only_a} in {name_a} "
                         f"only, {comparison.only_b} in {name_b} only); run both on the same tasks and fault modes")
    return comparison, paired_report(comparison)


def run(args: argparse.Namespace) -> int:
    from occusim.analysis import (
        RunError,
        agreement_report,
        load_runs,
        render_html,
        render_markdown,
        simulator_agreement,
        spans_world_models,
    )

    if len(args.runs) < 2:
        print("occusim compare: give at least two run folders", file=sys.stderr)
        return 2
    try:
        runs = load_runs(args.runs)
        if spans_world_models([config for _, config, _ in runs]):
            result = simulator_agreement(runs)
            report = agreement_report(result)
            data = result.model_dump_json(indent=2)
        elif len(runs) == 2:
            comparison, report = _paired(runs)
            data = comparison.model_dump_json(indent=2)
        else:
            raise RunError(f"{len(runs)} runs under one world model: compare two runs at a time, or give runs of the "
                           "same agents under two or more world models")
    except (RunError, OSError, ValueError) as error:
        print(f"occusim compare: {error}", file=sys.stderr)
        return 2
    text = {"json": data + "\n", "html": render_html(report), "md": render_markdown(report)}[args.format]
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text, encoding="utf-8")
        print(f"occusim compare: wrote {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0
