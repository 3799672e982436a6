"""`occusim generate`: draft a scenario for an occupation with an author model, verify it, write it with a review sheet."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from occusim.clients._generate_author import StageCall

DESCRIPTION = """\
Draft a new scenario for an occupation with an author model, check it as the catalog is checked, and write
it with a review sheet. The author model is asked for one part of the scenario format at a time; each
answer is validated against that part's model (the scenario format's own) and sent back with the problems
found, at most --retries times:

  1 brief       the occupation's real rules with their sources and numbers, the hidden fields, the traps
  2 tools       tools with JSON Schemas (read_only / writes), the state schema, an initial state fitting them
  3 tasks       --tasks tasks at difficulty 1 to 3, each with its trap in the data, not in the instruction
  4 rubrics     critical and guard items, order-insensitive checks, exemplars for the llm items
  5 references  the golden steps of each task: arguments, observations, state patches

Then the whole draft is verified: `occusim validate` (with the rubric audit), the discrimination gates of
`occusim validate --discrimination`, and `occusim simcheck` of the references through --world-model (at
least --min-faithful of the steps faithful). Each problem goes back to the stage that owns it (a rubric
pointer to the rubrics, a gate to the rubrics or the references, an unfaithful step to the references),
for at most --rounds rounds.

The draft never goes into the bundled catalog: --out receives ID.yaml (a scenario file, marked as a
draft, when every stage was accepted) and ID.review.md, the sheet a reviewer works through: each rule
with its source and the numbers to check against it, each task's trap, the gates' table, the simcheck
figures, what the model said it was unsure of, and every answer it gave. Promoting a draft is a reviewed
commit. Exit status: 0 verified, 1 not verified (or a stage gave up), 2 a wrong option.
See docs/authoring.md.
"""

EPILOG = """\
examples:
  occusim generate --occupation "Pharmacy technician (refills)" --category healthcare-life-sciences \\
      --model openai/gpt-4.1 --out drafts/
  occusim generate --occupation "Crane operator" --category industrial-engineering --model openai/gpt-4.1 \\
      --world-model openai/gpt-4.1-mini --rounds 3
  occusim generate --occupation "Librarian" --category education-culture --model local --max-tokens 3000
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--occupation", required=True, metavar="TEXT", help="the professional the agent stands in for"
    )
    parser.add_argument(
        "--category", required=True, metavar="C", help="the catalog category, by name or slug"
    )
    parser.add_argument(
        "--model",
        required=True,
        metavar="M",
        help="the author model (a litellm model string, "
        "`local`, or a scripted model named in OCCUSIM_SCRIPTED_MODELS)",
    )
    parser.add_argument(
        "--world-model",
        metavar="M",
        help="the world model simcheck replays the references through (default: --model)",
    )
    parser.add_argument("--tasks", type=int, default=3, metavar="N", help="how many tasks (default 3)")
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("drafts"),
        metavar="DIR",
        help="where to write ID.yaml and ID.review.md (default ./drafts)",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=2,
        metavar="N",
        help="rounds of repair after the first verification (default 2)",
    )
    parser.add_argument(
        "--retries",
        type=int,
        default=2,
        metavar="N",
        help="times a stage's rejected answer is sent back with its problems (default 2)",
    )
    parser.add_argument(
        "--min-faithful",
        type=float,
        default=0.9,
        metavar="F",
        help="share of reference steps the world model must simulate faithfully (default 0.9)",
    )
    parser.add_argument("--max-tokens", type=int, metavar="N", help="token cap per author answer")
    parser.add_argument(
        "--concurrency", type=int, default=4, metavar="N", help="simcheck calls at once (default 4)"
    )
    parser.add_argument(
        "--seed", type=int, default=0, metavar="S", help="seed of simcheck's calls (default 0)"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=600.0,
        metavar="S",
        help="seconds one author answer, or one simulated step of simcheck, may take (default 600)",
    )
    parser.add_argument("--no-cache", action="store_true", help="do not reuse cached model responses")


def _problem(args: argparse.Namespace) -> str | None:
    """What is wrong with the options, if anything."""
    for name in ("tasks", "concurrency"):
        if getattr(args, name) < 1:
            return f"--{name} must be at least 1, got {getattr(args, name)}"
    for name in ("rounds", "retries"):
        if getattr(args, name) < 0:
            return f"--{name} must be 0 or more, got {getattr(args, name)}"
    if args.timeout <= 0:
        return f"--timeout must be above 0, got {args.timeout}"
    if not 0.0 <= args.min_faithful <= 1.0:
        return f"--min-faithful must be between 0 and 1, got {args.min_faithful}"
    if not args.occupation.strip():
        return "--occupation must name an occupation"
    return None


def _report_call(call: StageCall) -> None:
    """One line on stderr per answer of the author model, as it is judged."""
    outcome = (
        "accepted" if call.accepted else f"rejected ({len(call.problems)} problem(s): {call.problems[0]})"
    )
    where = f"repair round {call.round}" if call.round else "first pass"
    print(f"  {call.stage:<10} {where}, answer {call.attempt}: {outcome}", file=sys.stderr)


async def run(args: argparse.Namespace) -> int:
    from occusim.clients import AuthorSettings, GenerationSettings, generate_scenario, write_generation
    from occusim.clients._generate_output import check_output_folder
    from occusim.clients.cli.serve import load_scripted_models
    from occusim.environments import CATEGORIES, category_slug
    from occusim.llm import ModelConfig, set_default_cache
    from occusim.server import WorldModel

    problem = _problem(args)
    by_slug = {category_slug(c): c for c in CATEGORIES}
    category = by_slug.get(category_slug(args.category))
    if category is None:
        problem = problem or f"unknown category {args.category!r}; choose from: {', '.join(by_slug)}"
    if problem:
        print(f"occusim generate: {problem}", file=sys.stderr)
        return 2
    check_output_folder(args.out)
    load_scripted_models(os.environ.get("OCCUSIM_SCRIPTED_MODELS", ""))
    if args.no_cache:
        set_default_cache(None)
    assert category is not None
    author = AuthorSettings(
        ModelConfig(model=args.model),
        task_count=args.tasks,
        retries=args.retries,
        max_tokens=args.max_tokens,
        on_call=_report_call,
        timeout=args.timeout,
    )
    world = WorldModel(ModelConfig(model=args.world_model or args.model), deadline=args.timeout)
    settings = GenerationSettings(
        args.occupation.strip(),
        category,
        author,
        world,
        rounds=args.rounds,
        min_faithful=args.min_faithful,
        concurrency=args.concurrency,
        seed=args.seed,
    )
    result = await generate_scenario(settings)
    for path in write_generation(result, args.out):
        print(f"  wrote {path}")
    accepted = sum(call.accepted for call in result.trail)
    if result.failure is not None:
        print(f"occusim generate: {result.failure}", file=sys.stderr)
    elif result.verifications[-1].simcheck_error:
        print(f"occusim generate: {result.verifications[-1].simcheck_error}", file=sys.stderr)
    elif not result.verified:
        remaining = sum(len(p) for p in result.verifications[-1].problems.values())
        print(
            f"occusim generate: the draft is not verified: {remaining} problem(s) remain after "
            f"{len(result.verifications)} round(s); see the review sheet",
            file=sys.stderr,
        )
    print(
        f"occusim generate: {len(result.trail)} author answers ({accepted} accepted), "
        f"{len(result.verifications)} verification round(s); "
        + ("verified, review it before promoting it" if result.verified else "not verified")
    )
    return 0 if result.verified else 1
