"""Reading a JSONL file of one pydantic model per line, with errors that name the file, the line and the field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from ._errors import JudgeError

Model = TypeVar("Model", bound=BaseModel)


def read_jsonl(path: str | Path, model: type[Model], *, error: type[JudgeError] = JudgeError,
               what: str = "labels file") -> list[tuple[int, Model]]:
    """(line number, model) for each non-blank line; every problem of the file is raised at once as `error`."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise error(f"{path}: no such {what}") from None
    except (OSError, UnicodeDecodeError) as problem:
        reason = problem.strerror if isinstance(problem, OSError) and problem.strerror else problem
        raise error(f"{path}: cannot read the {what}: {reason}") from None
    out: list[tuple[int, Model]] = []
    problems: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data: Any = json.loads(line)
        except json.JSONDecodeError as bad:
            problems.append(f"{path}:{number}: not JSON: {bad.msg} (column {bad.colno})")
            continue
        try:
            out.append((number, model.model_validate(data)))
        except ValidationError as invalid:
            for detail in invalid.errors(include_url=False):
                where = ".".join(str(part) for part in detail["loc"]) or "line"
                problems.append(f"{path}:{number}: {where}: {detail['msg']}")
    if problems:
        raise error("\n".join(problems))
    return out
