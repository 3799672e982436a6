"""`occusim judge-agreement`: how often the judge agrees with expert labels, and Cohen's kappa."""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import TYPE_CHECKING

from ._catalog_options import load_catalog_from
from .judge import add_judge_options, apply_cache_option, expected_failures, judge_settings, report_failure

if TYPE_CHECKING:
    from occusim.environments import Catalog
    from occusim.judge import LabelComparison, LabeledEpisode

DESCRIPTION = """\
Judge every labelled episode of LABELS.jsonl and compare the judge's verdicts with the expert's.
One JSON object per line:
  {"task_id": "TASK" or "task": {Task JSON} (optionally with "scenario": {Scenario JSON}),
   "trajectory": {EpisodeRecord JSON},
   "labels": {"ITEM_ID": true|false, "ITEM_ID#CHECK_INDEX": true|false, ...},
   "passed": true|false (optional, the expert's verdict on the whole task),
   "expert": "optional name", "note": "optional"}
Tasks named by task_id are looked up in the bundled catalog plus any --source.
Prints, per group (llm items, deterministic items, checks, tasks), the number of labels, the observed
agreement, Cohen's kappa and the confusion counts, then every disagreement with the judge's reason.
"""

EPILOG = """\
examples:
  occusim judge-agreement labels/triage.jsonl --judge-model openai/gpt-4.1 --votes 5
  occusim judge-agreement labels.jsonl --source occubench:path/to/OccuBench --json
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("labels", metavar="LABELS.jsonl", help="expert labels, one episode per line")
    add_judge_options(parser)
    parser.add_argument(
        "--concurrency", type=int, default=4, metavar="N", help="episodes judged at once (default 4)"
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")


def run(args: argparse.Namespace) -> int:
    from occusim.judge import agreement_by_group, read_labels

    apply_cache_option(args)
    try:
        labelled = read_labels(args.labels)
        needs_catalog = any(entry.task is None for _, entry in labelled) or bool(args.source)
        catalog = load_catalog_from(args) if needs_catalog else None
        comparisons = asyncio.run(_compare_all(args, labelled, catalog))
    except expected_failures() as error:
        return report_failure("judge-agreement", error)
    groups = agreement_by_group(comparisons)
    disagreements = [c for c in comparisons if c.judge is not None and c.judge != c.expert]
    undecided = sum(1 for c in comparisons if c.judge is None)
    if args.json:
        print(json.dumps(_as_json(groups, disagreements, undecided, len(labelled)), indent=2))
    else:
        _print_tables(groups, disagreements, undecided, len(labelled))
    return 0


async def _compare_all(
    args: argparse.Namespace, labelled: list[tuple[int, LabeledEpisode]], catalog: Catalog | None
) -> list[LabelComparison]:
    from occusim.judge import JudgeError, compare_labels, judge

    gate = asyncio.Semaphore(max(1, args.concurrency))
    settings = judge_settings(args)

    async def one(line: int, entry: LabeledEpisode) -> list[LabelComparison]:
        task = entry.task or catalog.task(entry.task_id or "")  # type: ignore[union-attr]
        scenario = entry.scenario
        if scenario is None and catalog is not None and task.scenario in catalog.scenarios:
            scenario = catalog.scenario(task.scenario)
        async with gate:
            try:
                verdict = await judge(
                    task,
                    entry.trajectory,
                    scenario=scenario,
                    model=args.judge_model,
                    votes=args.votes,
                    seed=args.seed,
                    settings=settings,
                )
            except JudgeError as error:
                raise type(error)(f"{args.labels}:{line}: {error}") from error
        return compare_labels(verdict, entry, line)

    results = await asyncio.gather(*(one(line, entry) for line, entry in labelled))
    return [comparison for result in results for comparison in result]


def _as_json(groups, disagreements, undecided: int, episodes: int) -> dict:
    return {
        "episodes": episodes,
        "undecided": undecided,
        "groups": {
            name: {
                "labels": a.total,
                "agreement": a.agreement,
                "kappa": a.kappa,
                "both_pass": a.both_pass,
                "both_fail": a.both_fail,
                "judge_only_pass": a.judge_only,
                "expert_only_pass": a.expert_only,
            }
            for name, a in groups.items()
        },
        "disagreements": [
            {
                "line": c.line,
                "episode_id": c.episode_id,
                "task_id": c.task_id,
                "label": c.key,
                "judge": c.judge,
                "expert": c.expert,
                "reason": c.reason,
            }
            for c in disagreements
        ],
    }


def _print_tables(groups, disagreements, undecided: int, episodes: int) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    table = Table(title=f"judge vs expert on {episodes} episodes")
    for column in (
        "labels",
        "n",
        "agreement",
        "kappa",
        "both pass",
        "both fail",
        "judge-only pass",
        "expert-only pass",
    ):
        table.add_column(column, justify="left" if column == "labels" else "right")
    for name, a in groups.items():
        table.add_row(
            name,
            str(a.total),
            "-" if a.agreement is None else f"{a.agreement:.1%}",
            "undefined" if a.kappa is None else f"{a.kappa:.3f}",
            str(a.both_pass),
            str(a.both_fail),
            str(a.judge_only),
            str(a.expert_only),
        )
    console.print(table)
    if undecided:
        console.print(f"{undecided} label(s) left out: the judge did not decide them")
    if disagreements:
        listing = Table(title=f"{len(disagreements)} disagreements")
        for column in ("line", "episode", "label", "judge", "expert", "judge's reason"):
            listing.add_column(column, overflow="fold")
        for c in disagreements:
            verdicts = {True: "pass", False: "fail"}
            listing.add_row(str(c.line), c.episode_id, c.key, verdicts[c.judge], verdicts[c.expert], c.reason)
        console.print(listing)
