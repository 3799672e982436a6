"""The review-label JSON Schema (one line of a reviewer's labels file), generated from `ReviewLabel`.

`python -m occusim.judge._review_label_schema` rewrites review-label.schema.json; `--check` only compares.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from occusim.environments import JSON_SCHEMA_DIALECT, regenerate_schema_file

from ._review_labels import ReviewLabel

REVIEW_LABEL_SCHEMA_PATH = Path(__file__).with_name("review-label.schema.json")


def review_label_json_schema() -> dict[str, Any]:
    """The JSON Schema of one line of a labels file."""
    return {"$schema": JSON_SCHEMA_DIALECT, **ReviewLabel.model_json_schema()}


def render_review_label_schema() -> str:
    return json.dumps(review_label_json_schema(), indent=2, ensure_ascii=False) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    return regenerate_schema_file(argv, prog="python -m occusim.judge._review_label_schema",
                                  path=REVIEW_LABEL_SCHEMA_PATH, render=render_review_label_schema)


if __name__ == "__main__":
    raise SystemExit(main())
