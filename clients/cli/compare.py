"""`occusim compare`: the paired difference in completion between two runs, per fault mode, with its significance."""

from __future__ import annotations

import argparse
import sys

DESCRIPTION = """\
Compare two run folders written by `occusim run`, typically two agents on the same tasks and fault modes.

Only the (task, fault mode) pairs scored in both runs count; pairs scored in one run only (not run, an
infrastructure error, or unjudged) are dropped and counted. For each fault mode, and for all modes
together, it prints completion in A and in B over those pairs, the difference A - B, its 95 % interval
(a paired bootstrap over tasks: a resampled task brings its outcomes in both runs) and the p-value of a
two-sided sign-flip permutation test on the per-task differences (exact when at most 16 tasks differ;
with one trial per task it is the exact McNemar test). A pair's outcome is the share of its scored
trials that passed. Settings other than the agent that differ between the runs (world model, judge,
protocol, prompt versions, ...) are listed, since they also explain a difference.

docs/metrics.md gives every formula.
"""

EPILOG = """\
examples:
  occusim compare runs/gpt41mini runs/gpt41
  occusim compare runs/gpt41mini runs/gpt41 --format json > comparison.json
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_a", metavar="RUN_A", help="the --out folder of the first run (A)")
    parser.add_argument("run_b", metavar="RUN_B", help="the --out folder of the second run (B)")
    parser.add_argument("--format", choices=["md", "json"], default="md",
                        help="md (a Markdown table, default) or json (every figure, machine-readable)")


def _percent(value: float) -> str:
    return f"{value:+.1%}" if value else "0.0%"


def render(comparison) -> str:
    lines = [f"# Paired comparison: {comparison.run_a} (A) vs {comparison.run_b} (B)", "",
             f"- **Agents:** A {comparison.agent_a}, B {comparison.agent_b}",
             f"- **Pairs:** {comparison.pairs} (task, fault mode) pairs scored in both runs; dropped: "
             f"{comparison.only_a} scored in A only, {comparison.only_b} scored in B only",
             f"- **Test:** {comparison.test}; significant when p < 0.05"]
    if comparison.other_differences:
        lines.append(f"- **Other settings differ:** {'; '.join(comparison.other_differences)}")
    lines += ["", "| Fault mode | Tasks | A | B | A - B | 95 % CI | p | Significant |", "|---|---|---|---|---|---|---|---|"]
    rows = [*comparison.modes, *([comparison.overall] if comparison.overall else [])]
    for row in rows:
        ci = "n/a (under 2 tasks)" if row.ci is None else f"[{_percent(row.ci.low)}, {_percent(row.ci.high)}]"
        lines.append(f"| {row.mode} | {row.tasks} | {row.rate_a:.1%} | {row.rate_b:.1%} | {_percent(row.difference)} "
                     f"| {ci} | {row.p_value:.4g} | {'yes' if row.significant else 'no'} |")
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> int:
    from occusim.clients import RunError, compare_runs

    try:
        comparison = compare_runs(args.run_a, args.run_b)
    except (RunError, OSError) as error:
        print(f"occusim compare: {error}", file=sys.stderr)
        return 2
    if not comparison.pairs:
        print(f"occusim compare: no (task, fault mode) pair was scored in both runs ({comparison.only_a} in "
              f"{args.run_a} only, {comparison.only_b} in {args.run_b} only); run both on the same tasks and "
              "fault modes", file=sys.stderr)
        return 2
    if args.format == "json":
        sys.stdout.write(comparison.model_dump_json(indent=2) + "\n")
    else:
        sys.stdout.write(render(comparison))
    return 0
