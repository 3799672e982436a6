"""`occusim import occubench PATH --out DIR`: convert a public release to native scenario YAML files."""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

DESCRIPTION = """\
Convert the public OccuBench release (eval_benchmark_solvable.jsonl, task_scenario_all_pool.jsonl,
world_model_configs/) to native scenario files, one per environment, at
DIR/<category-slug>/<scenario-id>.yaml. Existing files are left alone unless --force is given.
"""

EPILOG = """\
examples:
  occusim import occubench path/to/OccuBench --out scenarios/occubench
  occusim validate scenarios/occubench
"""

FORMATS = ("occubench",)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("format", choices=FORMATS, help="the release format")
    parser.add_argument("path", type=Path, help="the release folder")
    parser.add_argument(
        "--out", type=Path, required=True, metavar="DIR", help="where to write the YAML files"
    )
    parser.add_argument("--force", action="store_true", help="overwrite files that already exist")


def run(args: argparse.Namespace) -> int:
    from occusim.environments import (
        ScenarioErrors,
        category_slug,
        load_occubench,
        validate_scenario,
        write_scenario,
    )

    try:
        loaded = load_occubench(args.path)
    except ScenarioErrors as error:
        for problem in error.errors:
            print(problem, file=sys.stderr)
        print(
            f"occusim import: nothing written; {_count(len(error.errors), 'problem')} in {args.path}",
            file=sys.stderr,
        )
        return 1
    targets = [
        (scenario, origin, args.out / category_slug(scenario.category) / f"{scenario.id}.yaml")
        for scenario, origin in loaded
    ]
    existing = [path for _, _, path in targets if path.exists()]
    if existing and not args.force:
        print(
            f"occusim import: {len(existing)} of {len(targets)} files already exist (e.g. {existing[0]}); "
            "nothing written. Pass --force to overwrite them.",
            file=sys.stderr,
        )
        return 1
    problems = 0
    for scenario, origin, path in targets:
        problems += len(validate_scenario(scenario, str(path)))
        config = Path(origin.split(":", 1)[-1]).name
        header = (
            f"Converted from the OccuBench release (Apache-2.0): {config}\nby `occusim import occubench`."
        )
        write_scenario(scenario, path, header=header)
    categories = Counter(scenario.category for scenario, _, _ in targets)
    tasks = sum(len(scenario.tasks) for scenario, _, _ in targets)
    print(f"imported {tasks} tasks in {len(targets)} scenarios from {args.path} into {args.out}")
    for category, count in sorted(categories.items()):
        print(f"  {category_slug(category)}/: {count} scenarios")
    if problems:
        print(f"{_count(problems, 'problem')} found; run `occusim validate {args.out}`", file=sys.stderr)
        return 1
    print(f"check them with: occusim validate {args.out}")
    return 0


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"
