"""`occusim judge-agreement`: how often the judge agrees with labels (a labels file of episodes, or reviewers'
labels on a run), and Cohen's kappa."""

from __future__ import annotations

import argparse
import asyncio
import json
from collections import Counter
from typing import TYPE_CHECKING

from ._agreement_figures import figures, groups_json
from ._catalog_options import load_catalog_from
from .judge import add_judge_options, apply_cache_option, expected_failures, judge_settings, report_failure

if TYPE_CHECKING:
    from occusim.environments import Catalog, Task
    from occusim.judge import Agreement, LabelComparison, LabeledEpisode

DESCRIPTION = """\
Two ways to measure the judge against people's labels.

--labels FILE... (reviewers' labels on a run, as `occusim view RUN_DIR --label --reviewer NAME` saves them
in RUN_DIR/labels/NAME.jsonl): compares each reviewer's last label per episode and rubric item with the
verdict the run recorded in results.jsonl (the run's judge) or, with --judge-model, with the verdict of
that judge on the episodes of the run's store (to measure candidate judges on the same labels), and prints the
observed agreement and Cohen's kappa per item kind (state, tool_call, llm), per scenario and per reviewer;
then, for every two reviewers who labelled the same items, their agreement with each other; then each
disagreement with the reviewer's note. The run is the folder above labels/, or --run RUN_DIR. A malformed
line, an episode the run does not hold or an item its rubric does not have is an error naming the file and
the line.

LABELS.jsonl (episodes with their labels, one JSON object per line):
  {"task_id": "TASK" or "task": {Task JSON} (optionally with "scenario": {Scenario JSON}),
   "trajectory": {EpisodeRecord JSON},
   "labels": {"ITEM_ID": true|false, "ITEM_ID#CHECK_INDEX": true|false, ...},
   "passed": true|false (optional, the labeller's verdict on the whole task),
   "expert": "who labelled", "note": "optional"}
Tasks named by task_id are looked up in the bundled catalog plus any --source.
Each episode is judged twice: without exemplars, and with the exemplars its task carries (plus those of
--exemplars DIR), so you see what the exemplars change. Prints who labelled, then, per group (llm items,
deterministic items, checks, tasks), the number of labels, the observed agreement and Cohen's kappa of both,
then the confusion counts and every disagreement of the judge with exemplars, with its reason.
The figures are only as good as the labels: agreement with labels written by whoever wrote the tasks and
their exemplars shows that the mechanism works, not that a judge is calibrated.

--write-exemplars DIR turns disagreements into exemplars: every llm item or check label the judge (with
exemplars) got wrong becomes an exemplar with the label's verdict (the episode's calls, its final answer
and the label's note as the reason), added to DIR/<task>.yaml. Judge with them with --exemplars DIR, and
measure the effect on labels that did not produce them.
"""

EPILOG = """\
examples:
  occusim judge-agreement --labels runs/gpt41mini/labels/*.jsonl
  occusim judge-agreement --labels alice.jsonl bob.jsonl --run runs/gpt41mini --json
  occusim judge-agreement --labels runs/gpt41mini/labels/*.jsonl --judge-model openai/gpt-4.1 --votes 5
  occusim judge-agreement labels/triage.jsonl --judge-model openai/gpt-4.1 --votes 5
  occusim judge-agreement labels.jsonl --source occubench:path/to/OccuBench --json
  occusim judge-agreement labels.jsonl --judge-model openai/gpt-4.1 --write-exemplars exemplars/
  occusim judge-agreement more-labels.jsonl --judge-model openai/gpt-4.1 --exemplars exemplars/
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("labels", metavar="LABELS.jsonl", nargs="?",
                        help="labelled episodes, one per line (or use --labels)")
    parser.add_argument("--labels", dest="review_labels", metavar="FILE", nargs="+",
                        help="reviewers' labels on a run (RUN_DIR/labels/NAME.jsonl from `occusim view --label`)")
    parser.add_argument("--run", metavar="RUN_DIR",
                        help="with --labels: the run whose recorded verdicts are compared (default: the folder "
                             "above labels/)")
    add_judge_options(parser)
    parser.add_argument(
        "--concurrency", type=int, default=4, metavar="N", help="episodes judged at once (default 4)"
    )
    parser.add_argument(
        "--write-exemplars",
        metavar="DIR",
        help="write the judge's disagreements on llm labels as exemplars, one YAML file per task, into DIR",
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")


def run(args: argparse.Namespace) -> int:
    from occusim.judge import agreement_by_group, read_labels

    if args.review_labels is not None or args.labels is None:
        from ._review_report import run_reviews

        return run_reviews(args)
    apply_cache_option(args)
    try:
        labelled = read_labels(args.labels)
        needs_catalog = any(entry.task is None for _, entry in labelled) or bool(args.source or args.exemplars)
        catalog = load_catalog_from(args) if needs_catalog else None
        with_exemplars = asyncio.run(_compare_all(args, labelled, catalog, exemplars=True))
        # Without any exemplar to leave out, the second run would only repeat the first.
        shown = any(_task(entry, catalog).rubric.exemplars for _, entry in labelled)
        without = asyncio.run(_compare_all(args, labelled, catalog, exemplars=False)) if shown else with_exemplars
        written = _write_exemplars(args, with_exemplars, labelled) if args.write_exemplars else None
    except expected_failures() as error:
        return report_failure("judge-agreement", error)
    groups = agreement_by_group(with_exemplars)
    baseline = agreement_by_group(without)
    disagreements = [c for c in with_exemplars if c.judge is not None and c.judge != c.expert]
    undecided = sum(1 for c in with_exemplars if c.judge is None)
    labellers = dict(Counter(entry.expert or "(not named)" for _, entry in labelled).most_common())
    if args.json:
        report = _as_json(groups, disagreements, undecided, len(labelled))
        report["labelled_by"] = labellers
        report["without_exemplars"] = {
            "undecided": sum(1 for c in without if c.judge is None),
            "groups": groups_json(baseline),
        }
        if written is not None:
            report["exemplars_written"] = written
        print(json.dumps(report, indent=2))
    else:
        print("labelled by: " + ", ".join(f"{name} ({count} episodes)" for name, count in labellers.items()))
        _print_tables(groups, disagreements, undecided, len(labelled), baseline)
        if written is not None:
            files = len(written["files"])
            print(f"wrote {written['exemplars']} new exemplar(s) for {files} task(s) into {args.write_exemplars}")
    return 0


def _task(entry: LabeledEpisode, catalog: Catalog | None) -> Task:
    return entry.task or catalog.task(entry.task_id or "")  # type: ignore[union-attr]


def _write_exemplars(
    args: argparse.Namespace, comparisons: list[LabelComparison], labelled: list[tuple[int, LabeledEpisode]]
) -> dict:
    from occusim.environments import write_exemplars
    from occusim.judge import disagreement_exemplars

    found = disagreement_exemplars(comparisons, dict(labelled))
    files: dict[str, int] = {}
    for task_id, exemplars in sorted(found.items()):
        path, new = write_exemplars(args.write_exemplars, task_id, exemplars)
        files[str(path)] = new
    return {"exemplars": sum(files.values()), "files": files}


async def _compare_all(
    args: argparse.Namespace,
    labelled: list[tuple[int, LabeledEpisode]],
    catalog: Catalog | None,
    *,
    exemplars: bool,
) -> list[LabelComparison]:
    from occusim.judge import JudgeError, compare_labels, judge, without_exemplars

    gate = asyncio.Semaphore(max(1, args.concurrency))
    settings = judge_settings(args)

    async def one(line: int, entry: LabeledEpisode) -> list[LabelComparison]:
        task = _task(entry, catalog)
        if not exemplars:
            task = without_exemplars(task)
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


def _as_json(groups: dict[str, Agreement], disagreements: list[LabelComparison], undecided: int,
             episodes: int) -> dict:
    return {
        "episodes": episodes,
        "undecided": undecided,
        "groups": groups_json(groups),
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


def _print_tables(groups: dict[str, Agreement], disagreements: list[LabelComparison], undecided: int,
                  episodes: int, baseline: dict[str, Agreement]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    effect = Table(title="what the exemplars change")
    for column in ("labels", "n", "agreement without", "kappa without", "agreement with", "kappa with"):
        effect.add_column(column, justify="left" if column == "labels" else "right")
    for name in dict.fromkeys([*baseline, *groups]):
        before, after = baseline.get(name), groups.get(name)
        counted = after if after is not None else before
        assert counted is not None  # the name is one of either run's groups
        effect.add_row(name, str(counted.total), *figures(before), *figures(after))
    console.print(effect)
    table = Table(title=f"judge (with exemplars) vs labels on {episodes} episodes")
    for column in (
        "labels",
        "n",
        "agreement",
        "kappa",
        "both pass",
        "both fail",
        "judge-only pass",
        "label-only pass",
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
        for column in ("line", "episode", "label", "judge", "labelled", "judge's reason"):
            listing.add_column(column, overflow="fold")
        for c in disagreements:
            # A disagreement has the judge's verdict (undecided labels are counted apart).
            listing.add_row(str(c.line), c.episode_id, c.key, "pass" if c.judge else "fail",
                            "pass" if c.expert else "fail", c.reason)
        console.print(listing)
