"""`occusim judge`: score a stored episode or a trajectory file against its task's rubric."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ._catalog_options import add_catalog_options, add_exemplar_option, load_catalog_from

if TYPE_CHECKING:
    from rich.console import Console

    from occusim.environments import Catalog, EpisodeRecord
    from occusim.judge import CheckVerdict, JudgeSettings, Verdict

DESCRIPTION = """\
Judge one episode against its task's rubric and verification plan. The argument is either a trajectory
file (EpisodeRecord JSON, bare or under a "trajectory" key) or the id of an episode in the store
(--db, default $OCCUSIM_DB, else ~/.local/share/occusim/occusim.db). The task is looked up by the
record's task_id in the bundled catalog plus any --source.

state and tool_call items are checked directly; llm items and the verification plan are judged by
--judge-model (default: OCCUSIM_JUDGE_MODEL, then OCCUSIM_MODEL, then the local model) with --votes
votes, each seeing the checks in a different order and sent with its own seed. A vote whose answer is
unusable (unparseable, or cut at the token limit) is asked again up to --judge-reasks times, then counts
as a fail vote; a check no vote could answer is left undecided and the episode reported UNJUDGED.
--skip-llm scores only the deterministic items. The judge is shown the task's exemplars (labelled
answers of other episodes; the bundled ones are the catalog author's) and, with --exemplars DIR, those of DIR's files as well.
Exit status: 0 when the episode was judged (whatever the verdict), 1 when it could not be, 2 on bad input.
"""

EPILOG = """\
examples:
  occusim judge runs/ep-3f2a.json --judge-model openai/gpt-4.1
  occusim judge 3f2a9c0e --db postgresql+asyncpg://postgres@127.0.0.1/occusim --save
  occusim judge trajectory.json --source my-scenarios/ --skip-llm --json
  occusim judge runs/ep-3f2a.json --judge-model openai/gpt-4.1 --exemplars exemplars/
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "episode", metavar="EPISODE_ID|TRAJECTORY.json", help="a stored episode id or a JSON file"
    )
    parser.add_argument("--db", metavar="URL", help="store URL or SQLite path (see above for the default)")
    add_judge_options(parser)
    parser.add_argument("--skip-llm", action="store_true", help="score only the state and tool_call items")
    parser.add_argument(
        "--save", action="store_true", help="store the verdict with the episode (episode ids only)"
    )
    parser.add_argument("--json", action="store_true", help="print the verdict as JSON")


def add_judge_options(parser: argparse.ArgumentParser) -> None:
    """The options of every command that runs the judge: where tasks come from, the model, votes, cache."""
    add_catalog_options(parser)
    add_exemplar_option(parser)
    parser.add_argument("--judge-model", metavar="M", help="litellm model string of the judge")
    parser.add_argument("--votes", type=int, default=3, metavar="K", help="votes per llm check (default 3)")
    parser.add_argument("--seed", type=int, default=0, metavar="S",
                        help="seed of the check orders and the judge calls (default 0)")
    parser.add_argument("--no-cache", action="store_true", help="do not reuse cached judge responses")
    parser.add_argument("--judge-reasks", type=int, metavar="N",
                        help="times an unusable vote is asked again before it counts as a fail vote "
                             "(default $OCCUSIM_JUDGE_REASKS, else 2)")
    parser.add_argument("--judge-temperature", type=float, metavar="T",
                        help="sampling temperature of the votes (default $OCCUSIM_JUDGE_TEMPERATURE, else the "
                             "provider's default)")
    parser.add_argument("--judge-max-tokens", type=int, metavar="N",
                        help="token cap of one vote's answer (default $OCCUSIM_JUDGE_MAX_TOKENS, else none: the "
                             "provider's default)")


def judge_settings(args: argparse.Namespace) -> JudgeSettings:
    """The judge settings of the options above, over the OCCUSIM_JUDGE_* environment; raises JudgeError."""
    from occusim.judge import JudgeSettings

    return JudgeSettings.from_env(
        reasks=args.judge_reasks, temperature=args.judge_temperature, max_tokens=args.judge_max_tokens
    )


def apply_cache_option(args: argparse.Namespace) -> None:
    if args.no_cache:
        from occusim.llm import set_default_cache

        set_default_cache(None)


def expected_failures() -> tuple[type[Exception], ...]:
    """What a judging command reports as a message rather than a traceback."""
    from occusim.environments import ScenarioErrors, UnknownTaskError
    from occusim.judge import JudgeError

    return (ScenarioErrors, UnknownTaskError, JudgeError)


def report_failure(command: str, error: Exception) -> int:
    """Print the failure; the exit status is 1 when the judge model failed, 2 for unusable input."""
    from occusim.environments import ScenarioErrors
    from occusim.judge import JudgeModelError

    if isinstance(error, ScenarioErrors):
        for problem in error.errors:
            print(problem, file=sys.stderr)
        return 2
    print(f"occusim {command}: {error.args[0] if error.args else error}", file=sys.stderr)
    return 1 if isinstance(error, JudgeModelError) else 2


def run(args: argparse.Namespace) -> int:
    apply_cache_option(args)
    try:
        catalog = load_catalog_from(args)
        record = _read_trajectory(Path(args.episode)) if _is_file(args.episode) else None
        verdict = asyncio.run(_judge(args, catalog, record))
    except expected_failures() as error:
        return report_failure("judge", error)
    if args.json:
        print(verdict.model_dump_json(indent=2))
    else:
        from rich.console import Console

        print_verdict(verdict, Console())
    return 0


async def _judge(args: argparse.Namespace, catalog: Catalog, record: EpisodeRecord | None) -> Verdict:
    from occusim.judge import JudgeError

    if record is not None:
        if args.save:
            raise JudgeError("--save stores verdicts of stored episodes; give an episode id, not a file")
        return await _judge_record(args, catalog, record)
    from occusim.server import EpisodeNotFoundError, Store
    from occusim.service import default_store_url

    url = args.db or default_store_url()
    async with Store(url) as store:
        try:
            record = await store.load_episode(args.episode)
        except EpisodeNotFoundError:
            raise JudgeError(f"no episode {args.episode!r} in {store!r} (and no file of that name)") from None
        verdict = await _judge_record(args, catalog, record)
        if args.save:
            await store.save_judgment(record.id, verdict)
    return verdict


async def _judge_record(args: argparse.Namespace, catalog: Catalog, record: EpisodeRecord) -> Verdict:
    from occusim.judge import judge

    task = catalog.task(record.task_id)
    return await judge(
        task,
        record,
        scenario=catalog.scenario_of(task),
        model=args.judge_model,
        votes=args.votes,
        seed=args.seed,
        llm_items="skip" if args.skip_llm else "judge",
        settings=judge_settings(args),
    )


def _is_file(argument: str) -> bool:
    path = Path(argument)
    return path.suffix == ".json" or path.is_file()


def _read_trajectory(path: Path) -> EpisodeRecord:
    from pydantic import ValidationError

    from occusim.environments import EpisodeRecord
    from occusim.judge import JudgeError

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise JudgeError(f"{path}: cannot read the trajectory: {error.strerror or error}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise JudgeError(f"{path}: not JSON: {error}") from None
    # Files written around a record (e.g. {"trajectory": {...}}) are accepted too.
    if isinstance(data, dict) and "trajectory" in data and "steps" not in data:
        data = data["trajectory"]
    try:
        return EpisodeRecord.model_validate(data)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'top level'}: {e['msg']}" for e in error.errors()[:5]
        )
        raise JudgeError(f"{path}: not an episode record: {problems}") from None


def print_verdict(verdict: Verdict, console: Console) -> None:
    """The verdict as a table: one row per check, grouped by item, with votes and reasons."""
    from rich.table import Table

    outcome = {True: "[green]PASSED[/]", False: "[red]FAILED[/]", None: "[yellow]UNDECIDED[/]"}[
        verdict.passed
    ]
    if verdict.unjudged:
        outcome = f"[yellow]UNJUDGED[/] (could not decide {', '.join(verdict.unjudged_checks)})"
    partial = " (partial: llm items not judged)" if verdict.partial else ""
    console.print(
        f"[bold]{verdict.task_id}[/]  episode {verdict.episode_id or '-'}  score {verdict.score:.2f} "
        f"(threshold {verdict.pass_threshold:.2f})  {outcome}{partial}"
    )
    if verdict.judge_model:
        console.print(
            f"judge {verdict.judge_model}, {verdict.votes} votes, seed {verdict.seed}, prompt {verdict.prompt_version}; "
            f"{verdict.abstentions} abstentions, {len(verdict.ties)} ties, {verdict.reasks} re-asks; "
            f"{verdict.usage.prompt_tokens + verdict.usage.completion_tokens} tokens"
        )
    table = Table(show_lines=False)
    for column in ("item", "kind", "weight", "check", "result", "votes", "reason"):
        table.add_column(column, overflow="fold")
    for item in verdict.items:
        for position, check in enumerate(item.checks):
            first = position == 0
            table.add_row(
                f"{item.id} ({_mark(item.passed)})" if first else "",
                item.kind if first else "",
                f"{item.weight:g}" if first else "",
                check.description,
                "TIE" if check.tie else _mark(check.passed),
                _votes(check),
                check.reason,
            )
    console.print(table)


def _mark(passed: bool | None) -> str:
    return {True: "pass", False: "FAIL", None: "not judged"}[passed]


def _votes(check: CheckVerdict) -> str:
    if not check.votes:
        return ""
    ayes = sum(1 for v in check.votes if v.passed is True)
    noes = sum(1 for v in check.votes if v.passed is False)
    text = f"{ayes}-{noes}"
    return text + (f" ({check.abstentions} abst.)" if check.abstentions else "")
