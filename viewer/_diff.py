"""The observation the agent was shown beside the true one: a side-by-side line diff of their JSON text,
with the changed characters of a changed line marked."""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from typing import Any, Literal

Kind = Literal["same", "removed", "added", "changed", "blank"]


@dataclass(frozen=True)
class Segment:
    text: str
    marked: bool = False


@dataclass(frozen=True)
class Cell:
    kind: Kind
    segments: tuple[Segment, ...] = ()


@dataclass(frozen=True)
class DiffRow:
    """One row of the side-by-side diff: the shown line (left) and the true line (right)."""

    shown: Cell
    true: Cell


def pretty(value: Any) -> str:
    """A JSON value as indented text; a string that holds JSON (the occubench mode's text) is shown parsed."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return value
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False, default=str)


def side_by_side(shown: Any, true: Any) -> list[DiffRow]:
    left, right = pretty(shown).splitlines(), pretty(true).splitlines()
    rows: list[DiffRow] = []
    matcher = difflib.SequenceMatcher(a=left, b=right, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            rows += [DiffRow(_plain("same", a), _plain("same", b)) for a, b in zip(left[i1:i2], right[j1:j2],
                                                                                      strict=True)]
            continue
        olds, news = left[i1:i2], right[j1:j2]
        for index in range(max(len(olds), len(news))):
            old = olds[index] if index < len(olds) else None
            new = news[index] if index < len(news) else None
            if old is not None and new is not None:
                rows.append(DiffRow(*_changed(old, new)))
            elif old is not None:
                rows.append(DiffRow(_plain("removed", old, marked=True), Cell("blank")))
            elif new is not None:
                rows.append(DiffRow(Cell("blank"), _plain("added", new, marked=True)))
    return rows


def _plain(kind: Kind, text: str, *, marked: bool = False) -> Cell:
    return Cell(kind, (Segment(text, marked),))


def _changed(old: str, new: str) -> tuple[Cell, Cell]:
    """Two versions of a line, each with the characters the other lacks marked."""
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    if matcher.ratio() < 0.5:  # mostly different: marking scattered common letters would only add noise
        return _plain("changed", old, marked=True), _plain("changed", new, marked=True)
    left: list[Segment] = []
    right: list[Segment] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if i2 > i1:
            left.append(Segment(old[i1:i2], tag != "equal"))
        if j2 > j1:
            right.append(Segment(new[j1:j2], tag != "equal"))
    return Cell("changed", tuple(left)), Cell("changed", tuple(right))
