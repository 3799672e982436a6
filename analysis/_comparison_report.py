"""`occusim compare` as a report: the paired comparison of two runs, or the agreement between world models."""

from __future__ import annotations

from ._comparison import RunComparison
from ._report import Report, Table
from ._simulator_agreement import PairAgreement, SimulatorAgreement


def _signed(value: float) -> str:
    return f"{value:+.1%}" if value else "0.0%"


def paired_report(comparison: RunComparison) -> Report:
    facts = [("Agents", f"A {comparison.agent_a}, B {comparison.agent_b}"),
             ("Pairs", f"{comparison.pairs} (task, fault mode) pairs scored in both runs; dropped: "
                       f"{comparison.only_a} scored in A only, {comparison.only_b} scored in B only"),
             ("Test", f"{comparison.test}; significant when p < 0.05")]
    facts.append(("Runs differ in", "; ".join(comparison.differences) or "nothing recorded: same settings and provenance"))
    if comparison.other_differences:
        facts.append(("Other settings differ", "; ".join(comparison.other_differences)))
    rows = []
    for row in [*comparison.modes, *([comparison.overall] if comparison.overall else [])]:
        ci = "n/a (under 2 tasks)" if row.ci is None else f"[{_signed(row.ci.low)}, {_signed(row.ci.high)}]"
        rows.append([row.mode, str(row.tasks), f"{row.rate_a:.1%}", f"{row.rate_b:.1%}", _signed(row.difference), ci,
                     f"{row.p_value:.4g}", "yes" if row.significant else "no"])
    table = Table("Completion by fault mode", ["Fault mode", "Tasks", "A", "B", "A - B", "95 % CI", "p", "Significant"],
                  rows, note="Over the (task, fault mode) pairs scored in both runs; see docs/metrics.md.")
    return Report(f"Paired comparison: {comparison.run_a} (A) vs {comparison.run_b} (B)", facts, [table])


def _optional(value: float | None, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def _agreement_row(pair: PairAgreement) -> list[str]:
    ranks = (f"{_optional(pair.rank_agreement, '.1%')} ({pair.concordant_pairs}/{pair.agent_pairs})"
             if pair.agent_pairs else "n/a (under 2 agents)")
    outcomes = (f"{_optional(pair.outcome_agreement, '.1%')} ({pair.both_pass + pair.both_fail}/{pair.units})"
                if pair.units else "n/a")
    return [pair.world_a, pair.world_b, str(pair.agents), str(pair.ranked_tasks), ranks, outcomes,
            _optional(pair.kappa, ".3f"), f"{pair.both_pass}/{pair.both_fail}/{pair.pass_a_only}/{pair.pass_b_only}"]


_HEADERS = ["World model A", "World model B", "Agents", "Ranked on", "Rank agreement", "Outcome agreement",
            "Cohen's kappa", "Pass both / fail both / A only / B only"]


def agreement_report(result: SimulatorAgreement) -> Report:
    facts = [("Runs", "; ".join(f"{run.run} ({run.agent} under {run.world_model})" for run in result.runs)),
             ("World models", ", ".join(result.world_models)),
             ("Agents", ", ".join(result.agents))]
    if result.other_differences:
        facts.append(("Other settings differ", "; ".join(result.other_differences)))
    worlds = result.world_models
    completion = {(row.agent, row.world_model): row for row in result.completion}
    tables = [
        Table("Agreement between world models", _HEADERS, [_agreement_row(pair) for pair in result.pairs],
              note="Rank agreement: agent pairs ordered the same way by completion over the (task, fault mode) "
                   "pairs every agent scored under both world models (Ranked on). Outcome agreement and Cohen's "
                   "kappa: each (agent, task, fault mode) passes when most of its scored trials passed. See "
                   "docs/metrics.md."),
        Table("Agreement by category", ["Category", *_HEADERS],
              [[pair.category, *_agreement_row(pair)] for pair in result.by_category]),
        Table("Completion by agent and world model", ["Agent", *worlds],
              [[agent, *(f"{completion[agent, world].completion:.1%} ({completion[agent, world].pairs} pairs)"
                         if (agent, world) in completion else "-" for world in worlds)] for agent in result.agents],
              note="Mean pass share over every (task, fault mode) pair the agent scored under that world model."),
    ]
    return Report("Cross-simulator agreement", facts, tables)
