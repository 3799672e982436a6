"""The scenario-file JSON Schema, generated from the pydantic models.

`python -m occusim.environments._schema` rewrites scenario.schema.json; `--check` only compares.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ._scenario import Scenario

SCENARIO_SCHEMA_PATH = Path(__file__).with_name("scenario.schema.json")
JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def scenario_json_schema() -> dict[str, Any]:
    """The JSON Schema of one scenario YAML file (editors can use it for completion and checking)."""
    schema = {"$schema": JSON_SCHEMA_DIALECT, **Scenario.model_json_schema()}
    schema["title"] = "occusim scenario file"
    return schema


def render_scenario_schema() -> str:
    return json.dumps(scenario_json_schema(), indent=2, ensure_ascii=False) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    return regenerate_schema_file(argv, prog="python -m occusim.environments._schema", path=SCENARIO_SCHEMA_PATH,
                                  render=render_scenario_schema)


def regenerate_schema_file(argv: Sequence[str] | None, *, prog: str, path: Path, render: Callable[[], str]) -> int:
    """The command line of a generated schema file: rewrite it from `render`, or with `--check` only compare."""
    parser = argparse.ArgumentParser(prog=prog, description=f"Regenerate {path.name}.")
    parser.add_argument("--check", action="store_true", help="exit 1 if the committed file is out of date")
    parser.add_argument("--out", type=Path, default=path, help="where to write the schema")
    args = parser.parse_args(argv)
    text = render()
    current = args.out.read_text(encoding="utf-8") if args.out.is_file() else None
    if args.check:
        if current == text:
            print(f"{args.out} is up to date")
            return 0
        print(f"{args.out} is out of date; run `{prog}`", file=sys.stderr)
        return 1
    if current != text:
        args.out.write_text(text, encoding="utf-8")
        print(f"wrote {args.out}")
    else:
        print(f"{args.out} is up to date")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
