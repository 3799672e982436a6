"""Reviewers' labels against the judge's recorded verdicts, and reviewers against each other: agreement and
Cohen's kappa per item kind, per scenario and per reviewer."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from ._agreement import Agreement
from ._review_labels import LabelFileError, PlacedLabel, latest_labels
from ._verdict import Verdict

KIND_ORDER = ("state", "tool_call", "llm")


@dataclass(frozen=True)
class JudgedEpisode:
    """An episode of the run and the judge's verdict on it."""

    episode_id: str
    scenario_id: str
    verdict: Verdict


@dataclass(frozen=True)
class ReviewedItem:
    """One reviewer's label on one item beside the judge's verdict on it (None: the judge left it undecided)."""

    placed: PlacedLabel
    kind: str
    judge: bool | None

    @property
    def reviewer(self) -> str:
        return self.placed.label.reviewer


@dataclass(frozen=True)
class ReviewerPair:
    """Two reviewers on the items both labelled; `agreement` counts (first, second) like (judge, expert)."""

    first: str
    second: str
    agreement: Agreement
    disagreements: list[tuple[PlacedLabel, PlacedLabel]]


@dataclass
class ReviewAgreement:
    """Judge vs reviewers (each reviewer's label is one pair), grouped three ways; reviewer pairs apart."""

    items: list[ReviewedItem] = field(default_factory=list)
    by_kind: dict[str, Agreement] = field(default_factory=dict)
    by_scenario: dict[str, Agreement] = field(default_factory=dict)
    by_reviewer: dict[str, Agreement] = field(default_factory=dict)
    overall: Agreement = field(default_factory=Agreement)
    reviewer_pairs: list[ReviewerPair] = field(default_factory=list)

    @property
    def undecided(self) -> int:
        """Labels on items the judge did not decide: left out of every figure."""
        return sum(1 for item in self.items if item.judge is None)

    @property
    def disagreements(self) -> list[ReviewedItem]:
        return [item for item in self.items if item.judge is not None and item.judge != item.placed.label.passed]


def review_agreement(labels: list[PlacedLabel], judged: dict[str, JudgedEpisode]) -> ReviewAgreement:
    """Pair each reviewer's last label per (episode, item) with the judge's verdict on that item.

    Raises LabelFileError naming every label (file and line) whose episode is not among `judged`, whose task is
    not the episode's, or whose item is not in the episode's rubric."""
    latest = sorted(latest_labels(labels).values(), key=lambda p: (str(p.path), p.line))
    problems: list[str] = []
    result = ReviewAgreement()
    for placed in latest:
        label = placed.label
        episode = judged.get(label.episode_id)
        if episode is None:
            problems.append(f"{placed.where}: episode {label.episode_id!r} is not a judged episode of the run")
            continue
        if label.task_id != episode.verdict.task_id:
            problems.append(f"{placed.where}: episode {label.episode_id!r} is of task {episode.verdict.task_id!r}, "
                            f"not {label.task_id!r}")
            continue
        items = {item.id: item for item in episode.verdict.items}
        if label.item not in items:
            problems.append(f"{placed.where}: item {label.item!r} is not in the rubric of {label.task_id!r} "
                            f"(its items: {', '.join(items) or 'none'})")
            continue
        item = items[label.item]
        result.items.append(ReviewedItem(placed, item.kind, item.passed))
    if problems:
        raise LabelFileError("\n".join(problems))
    for reviewed in result.items:
        if reviewed.judge is None:
            continue
        label = reviewed.placed.label
        pair = (reviewed.judge, label.passed)
        result.by_kind[reviewed.kind] = result.by_kind.get(reviewed.kind, Agreement()).add(*pair)
        scenario = judged[label.episode_id].scenario_id
        result.by_scenario[scenario] = result.by_scenario.get(scenario, Agreement()).add(*pair)
        result.by_reviewer[label.reviewer] = result.by_reviewer.get(label.reviewer, Agreement()).add(*pair)
        result.overall = result.overall.add(*pair)
    result.by_kind = {kind: result.by_kind[kind] for kind in sorted(result.by_kind, key=_kind_rank)}
    result.by_scenario = dict(sorted(result.by_scenario.items()))
    result.by_reviewer = dict(sorted(result.by_reviewer.items()))
    result.reviewer_pairs = _reviewer_pairs(latest)
    return result


def _kind_rank(kind: str) -> tuple[int, str]:
    return (KIND_ORDER.index(kind) if kind in KIND_ORDER else len(KIND_ORDER), kind)


def _reviewer_pairs(latest: list[PlacedLabel]) -> list[ReviewerPair]:
    """Each pair of reviewers that labelled some same (episode, item), on those items only."""
    by_reviewer: dict[str, dict[tuple[str, str], PlacedLabel]] = {}
    for placed in latest:
        by_reviewer.setdefault(placed.label.reviewer, {})[placed.label.key] = placed
    pairs = []
    for first, second in itertools.combinations(sorted(by_reviewer), 2):
        shared = sorted(set(by_reviewer[first]) & set(by_reviewer[second]))
        if not shared:
            continue
        tally = Agreement()
        disagreements = []
        for key in shared:
            a, b = by_reviewer[first][key], by_reviewer[second][key]
            tally = tally.add(a.label.passed, b.label.passed)
            if a.label.passed != b.label.passed:
                disagreements.append((a, b))
        pairs.append(ReviewerPair(first, second, tally, disagreements))
    return pairs
