"""A reviewer's labels on a run's episodes (the file `occusim view --label` appends to): the one format, read back.

One JSON object per line, appended as the reviewer saves; a later line for the same (episode, item) replaces
an earlier one, so the file keeps every change and the last word counts. `review-label.schema.json` is
generated from `ReviewLabel`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from ._errors import JudgeError
from ._jsonl import read_jsonl

REVIEWER_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
REVIEWER_NAME = re.compile(REVIEWER_PATTERN)
NOTE_LIMIT = 4000


class ReviewLabel(BaseModel):
    """One reviewer's pass/fail on one rubric item of one episode, with the reviewer's note."""

    model_config = ConfigDict(extra="forbid", title="occusim review label")

    episode_id: str = Field(min_length=1, description="The labelled episode, as the run's results name it.")
    task_id: str = Field(min_length=1, description="The episode's task.")
    scenario_id: str = Field(description="The episode's scenario.")
    item: str = Field(min_length=1, description="The rubric item's id.")
    passed: bool = Field(description="The reviewer's verdict on the item: does the episode meet it?")
    note: str = Field(default="", max_length=NOTE_LIMIT, description="Why, in the reviewer's words.")
    reviewer: str = Field(pattern=REVIEWER_PATTERN, description="Who labelled (also the file's name).")
    labelled_at: datetime = Field(description="When the label was saved (UTC).")

    @property
    def key(self) -> tuple[str, str]:
        return self.episode_id, self.item


class LabelFileError(JudgeError):
    """A labels file cannot be used: unreadable, a malformed line, or labels that name nothing in the run."""


@dataclass(frozen=True)
class PlacedLabel:
    """A label and where it was read: the file and the line number."""

    path: Path
    line: int
    label: ReviewLabel

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


def reviewer_problem(name: str) -> str | None:
    """Why `name` cannot name a reviewer (it becomes a file name); None when it can."""
    if REVIEWER_NAME.fullmatch(name):
        return None
    return (f"reviewer {name!r} is not a usable name: 1-64 letters, digits, '.', '_' or '-', starting with a "
            "letter or digit")


def label_line(label: ReviewLabel) -> str:
    """The label as one line of its file, newline included."""
    return json.dumps(label.model_dump(mode="json"), ensure_ascii=False, sort_keys=True) + "\n"


def read_review_labels(path: str | Path) -> list[PlacedLabel]:
    """Every line of a labels file, in order; errors name the file, the line and the field. A missing file
    is an error; an empty one holds no label."""
    return [PlacedLabel(Path(path), number, label)
            for number, label in read_jsonl(path, ReviewLabel, error=LabelFileError)]


def latest_labels(placed: list[PlacedLabel]) -> dict[tuple[str, str, str], PlacedLabel]:
    """The label that counts for each (reviewer, episode, item): the last one saved."""
    out: dict[tuple[str, str, str], PlacedLabel] = {}
    for entry in placed:
        out[(entry.label.reviewer, *entry.label.key)] = entry
    return out
