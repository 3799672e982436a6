"""`occusim judge-agreement --labels`: reviewers' labels on a run against its recorded verdicts, and against
each other."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ._agreement_figures import agreement_json, figures, groups_json
from ._catalog_options import load_catalog_from
from .judge import apply_cache_option, expected_failures, judge_settings, report_failure

if TYPE_CHECKING:
    from occusim.analysis import ResultRow
    from occusim.judge import Agreement, JudgedEpisode, ReviewAgreement

VERDICTS = {True: "pass", False: "fail", None: "undecided"}


def run_reviews(args: argparse.Namespace) -> int:
    from occusim.analysis import RunError
    from occusim.judge import LabelFileError, read_review_labels, review_agreement

    if args.review_labels is None:
        return _fail("give LABELS.jsonl, or --labels FILE... (reviewers' labels from `occusim view --label`)")
    if args.labels is not None:
        return _fail("give LABELS.jsonl or --labels FILE..., not both")
    if args.write_exemplars is not None:
        return _fail("--write-exemplars takes a LABELS.jsonl (its lines carry the episodes); not --labels")
    try:
        placed = [entry for path in args.review_labels for entry in read_review_labels(path)]
        run_folder = _run_folder(args)
        if args.judge_model is None:
            judged = judged_episodes(run_folder)
        else:
            apply_cache_option(args)
            wanted = {entry.label.episode_id for entry in placed}
            judged = asyncio.run(rejudged_episodes(args, run_folder, wanted))
        result = review_agreement(placed, judged)
    except (LabelFileError, RunError) as error:
        return _fail(str(error))
    except expected_failures() as error:
        return report_failure("judge-agreement", error)
    judge = args.judge_model or "recorded"
    if args.json:
        print(json.dumps({"judge": judge, **_as_json(result, run_folder, len(placed))}, indent=2))
    else:
        _print(result, run_folder, args.judge_model)
    return 0


def _fail(message: str) -> int:
    print(f"occusim judge-agreement: {message}", file=sys.stderr)
    return 2


def _run_folder(args: argparse.Namespace) -> Path:
    """--run, or the one folder above `labels/` that holds every file."""
    from occusim.analysis import RunError

    if args.run is not None:
        return Path(args.run)
    folders = {Path(path).resolve().parent for path in args.review_labels}
    runs = {folder.parent for folder in folders if folder.name == "labels"}
    if len(runs) != 1 or len(folders) != 1:
        raise RunError("the labels files are not all in one RUN_DIR/labels/ folder: name the run with --run RUN_DIR")
    return runs.pop()


def judged_episodes(run_folder: Path) -> dict[str, JudgedEpisode]:
    """The run's judged episodes with the verdicts its results recorded, by episode id."""
    from occusim.judge import JudgedEpisode

    return {episode_id: JudgedEpisode(episode_id, row.scenario_id, row.verdict)
            for episode_id, row in _run_rows(run_folder).items() if row.verdict is not None}


def _run_rows(run_folder: Path) -> dict[str, ResultRow]:
    from occusim.analysis import RunDir

    run_dir = RunDir(run_folder)
    run_dir.read_config()  # a clear error when the folder is not a run
    return {row.episode_id: row for row in run_dir.latest_rows() if row.episode_id is not None}


async def rejudged_episodes(args: argparse.Namespace, run_folder: Path, wanted: set[str]) -> dict[str, JudgedEpisode]:
    """The labelled episodes of the run that its store holds, judged again by --judge-model."""
    from occusim.analysis import RunDir, RunError
    from occusim.clients import store_missing
    from occusim.judge import JudgedEpisode, judge
    from occusim.server import EpisodeNotFoundError, Store

    rows = _run_rows(run_folder)
    run_dir = RunDir(run_folder)
    url = run_dir.read_config().db or run_dir.default_db
    missing = store_missing(url)
    if missing is not None:
        raise RunError(f"{missing}: --judge-model judges the run's stored episodes again, and there are none")
    catalog = load_catalog_from(args)
    settings = judge_settings(args)
    gate = asyncio.Semaphore(max(1, args.concurrency))
    async with Store(url) as store:

        async def one(episode_id: str) -> JudgedEpisode:
            try:
                record = await store.load_episode(episode_id)
            except EpisodeNotFoundError:
                raise RunError(f"the run's store holds no episode {episode_id!r}, so it cannot be judged again") from None
            task = catalog.task(record.task_id)
            async with gate:
                verdict = await judge(task, record, scenario=catalog.scenario_of(task), model=args.judge_model,
                                      votes=args.votes, seed=args.seed, settings=settings)
            return JudgedEpisode(episode_id, rows[episode_id].scenario_id, verdict)

        # Labels on episodes the run does not hold are reported by review_agreement, with their lines.
        judged = await asyncio.gather(*(one(episode_id) for episode_id in sorted(wanted & set(rows))))
    return {episode.episode_id: episode for episode in judged}


def _as_json(result: ReviewAgreement, run_folder: Path, lines: int) -> dict:
    return {
        "run": str(run_folder),
        "label_lines": lines,
        "labels": len(result.items),
        "undecided": result.undecided,
        "all": agreement_json(result.overall, second="reviewer"),
        "by_kind": groups_json(result.by_kind, second="reviewer"),
        "by_scenario": groups_json(result.by_scenario, second="reviewer"),
        "by_reviewer": groups_json(result.by_reviewer, second="reviewer"),
        "reviewer_pairs": [
            {"first": pair.first, "second": pair.second, **agreement_json(pair.agreement, "first", "second"),
             "disagreements": [{"episode_id": a.label.episode_id, "item": a.label.item, pair.first: a.label.passed,
                                pair.second: b.label.passed, "notes": [a.label.note, b.label.note]}
                               for a, b in pair.disagreements]}
            for pair in result.reviewer_pairs
        ],
        "disagreements": [
            {"file": str(item.placed.path), "line": item.placed.line, "reviewer": item.reviewer,
             "episode_id": item.placed.label.episode_id, "item": item.placed.label.item, "kind": item.kind,
             "judge": item.judge, "reviewer_verdict": item.placed.label.passed, "note": item.placed.label.note}
            for item in result.disagreements
        ],
    }


def _print(result: ReviewAgreement, run_folder: Path, judge_model: str | None) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    judged = f"{judge_model} on the episodes of {run_folder}" if judge_model else f"the verdicts recorded in {run_folder}"
    table = Table(title=f"{judged} vs reviewers' labels")
    for column in ("group", "n", "agreement", "kappa", "both pass", "both fail", "judge-only pass",
                   "reviewer-only pass"):
        table.add_column(column, justify="left" if column == "group" else "right")
    rows: list[tuple[str, Agreement]] = [
        *((f"kind {kind}", a) for kind, a in result.by_kind.items()),
        *((f"scenario {scenario}", a) for scenario, a in result.by_scenario.items()),
        *((f"reviewer {reviewer}", a) for reviewer, a in result.by_reviewer.items()),
        ("all", result.overall),
    ]
    for name, a in rows:
        table.add_row(name, str(a.total), *figures(a), str(a.both_pass), str(a.both_fail), str(a.judge_only),
                      str(a.expert_only))
    console.print(table)
    if result.undecided:
        console.print(f"{result.undecided} label(s) left out: the judge did not decide those items")
    if result.reviewer_pairs:
        pairs = Table(title="reviewer vs reviewer, on the items both labelled")
        for column in ("reviewers", "n", "agreement", "kappa", "disagreements"):
            pairs.add_column(column, justify="left" if column == "reviewers" else "right")
        for pair in result.reviewer_pairs:
            pairs.add_row(f"{pair.first} / {pair.second}", str(pair.agreement.total), *figures(pair.agreement),
                          str(len(pair.disagreements)))
        console.print(pairs)
    else:
        console.print("no two reviewers labelled the same item: no reviewer-vs-reviewer figure")
    if result.disagreements:
        listing = Table(title=f"{len(result.disagreements)} disagreements of the judge with a reviewer")
        for column in ("where", "reviewer", "episode", "item", "judge", "reviewer's", "note"):
            listing.add_column(column, overflow="fold")
        for item in result.disagreements:
            label = item.placed.label
            listing.add_row(item.placed.where, label.reviewer, label.episode_id, label.item, VERDICTS[item.judge],
                            VERDICTS[label.passed], label.note)
        console.print(listing)
