"""The index's filters: read from the query string (a plain GET form), applied to the entries."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ._models import EpisodeEntry

PASSED_CHOICES = {"yes": "passed", "no": "failed", "none": "not judged"}


@dataclass(frozen=True)
class Filter:
    """One filter: its query parameter, its label and how an entry answers it."""

    name: str
    label: str
    values_of: Callable[[EpisodeEntry], list[str]]


def _passed(entry: EpisodeEntry) -> list[str]:
    return ["none" if entry.passed is None else "yes" if entry.passed else "no"]


FILTERS = (
    Filter("task", "Task", lambda entry: [entry.task_id]),
    Filter("category", "Category", lambda entry: [entry.category] if entry.category else []),
    Filter("fault", "Fault mode", lambda entry: [entry.fault_mode]),
    Filter("passed", "Passed", _passed),
    Filter("world_model", "World model", lambda entry: [entry.world_model] if entry.world_model else []),
    Filter("flag", "Simulator flag", lambda entry: entry.flags),
)


@dataclass(frozen=True)
class Selection:
    """The chosen value of each filter (missing or empty: any)."""

    chosen: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_query(cls, query: Mapping[str, str]) -> Selection:
        names = {item.name for item in FILTERS}
        return cls({name: value for name, value in query.items() if name in names and value})

    def keeps(self, entry: EpisodeEntry) -> bool:
        return all(self.chosen[item.name] in item.values_of(entry) for item in FILTERS if item.name in self.chosen)

    def apply(self, entries: list[EpisodeEntry]) -> list[EpisodeEntry]:
        return [entry for entry in entries if self.keeps(entry)]


@dataclass(frozen=True)
class FilterChoices:
    """A filter as the form shows it: its options (value, label) and the chosen one."""

    name: str
    label: str
    options: list[tuple[str, str]]
    chosen: str


def filter_choices(entries: list[EpisodeEntry], selection: Selection) -> list[FilterChoices]:
    """Every filter with the values the entries have; a filter no entry can answer (no flags) is left out."""
    shown = []
    for item in FILTERS:
        values = sorted({value for entry in entries for value in item.values_of(entry)})
        chosen = selection.chosen.get(item.name, "")
        if not values and not chosen:
            continue
        if chosen and chosen not in values:
            values.append(chosen)
        labels = PASSED_CHOICES if item.name == "passed" else {}
        shown.append(FilterChoices(item.name, item.label, [(value, labels.get(value, value)) for value in values],
                                   chosen))
    return shown
