"""Reviewers' labels against recorded verdicts: agreement and kappa per item kind, scenario and reviewer,
reviewer against reviewer, and errors naming the label's file and line."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from occusim.judge import (
    ItemVerdict,
    JudgedEpisode,
    LabelFileError,
    PlacedLabel,
    ReviewLabel,
    Verdict,
    review_agreement,
)

WHEN = datetime(2026, 12, 3, 8, 0, tzinfo=UTC)
KINDS = {"closed": "state", "refund-call": "tool_call", "answer": "llm", "tone": "llm"}


def verdict(task: str, episode: str, **passed: bool | None) -> Verdict:
    return Verdict(
        task_id=task, episode_id=episode, score=0.5, passed=False, pass_threshold=1.0, prompt_version="t",
        items=[ItemVerdict(id=item, kind=KINDS[item], weight=1.0, passed=value, deterministic=KINDS[item] != "llm")  # type: ignore[arg-type]
               for item, value in passed.items()],
    )


JUDGED = {
    "ep-1": JudgedEpisode("ep-1", "chargeback", verdict("chargeback/dispute", "ep-1", closed=True,
                                                        **{"refund-call": True}, answer=True, tone=None)),
    "ep-2": JudgedEpisode("ep-2", "chargeback", verdict("chargeback/dispute", "ep-2", closed=True,
                                                        **{"refund-call": False}, answer=False)),
    "ep-3": JudgedEpisode("ep-3", "pharmacy", verdict("pharmacy/refill", "ep-3", closed=False, answer=True)),
}


def placed(reviewer: str, episode: str, item: str, passed: bool, line: int = 1, note: str = "") -> PlacedLabel:
    task = JUDGED[episode].verdict.task_id if episode in JUDGED else "chargeback/dispute"
    return PlacedLabel(Path(f"{reviewer}.jsonl"), line, ReviewLabel(
        episode_id=episode, task_id=task, scenario_id=task.split("/")[0], item=item, passed=passed, note=note,
        reviewer=reviewer, labelled_at=WHEN))


def test_groups_by_kind_scenario_and_reviewer_count_each_reviewers_last_label():
    labels = [
        placed("alice", "ep-1", "closed", True, 1),
        placed("alice", "ep-1", "refund-call", True, 2),
        placed("alice", "ep-1", "answer", True, 3),
        placed("alice", "ep-2", "answer", True, 4),     # replaced below
        placed("alice", "ep-2", "answer", False, 5),    # agrees with the judge
        placed("alice", "ep-2", "refund-call", True, 6, "the refund was issued by hand"),  # judge: fail
        placed("alice", "ep-3", "closed", True, 7),     # judge: fail
        placed("alice", "ep-1", "tone", True, 8),       # the judge left it undecided
        placed("bob", "ep-1", "answer", False, 1),      # judge: pass
        placed("bob", "ep-2", "answer", False, 2),
        placed("bob", "ep-3", "answer", True, 3),
    ]
    result = review_agreement(labels, JUDGED)

    assert result.undecided == 1 and len(result.items) == 10
    assert list(result.by_kind) == ["state", "tool_call", "llm"]
    state, call, llm = (result.by_kind[k] for k in ("state", "tool_call", "llm"))
    assert (state.both_pass, state.both_fail, state.judge_only, state.expert_only) == (1, 0, 0, 1)
    assert (call.both_pass, call.expert_only) == (1, 1)
    assert (llm.both_pass, llm.both_fail, llm.judge_only, llm.expert_only) == (2, 2, 1, 0)
    assert llm.agreement == pytest.approx(4 / 5)
    # p_o = 0.8; judge passes 3/5, reviewers 2/5; p_e = 0.6*0.4 + 0.4*0.6 = 0.48; kappa = 0.32/0.52.
    assert llm.kappa == pytest.approx(0.32 / 0.52)
    assert {name: a.total for name, a in result.by_scenario.items()} == {"chargeback": 7, "pharmacy": 2}
    assert {name: a.total for name, a in result.by_reviewer.items()} == {"alice": 6, "bob": 3}
    assert result.overall.total == 9 and result.overall.agreement == pytest.approx(6 / 9)
    assert sorted((d.reviewer, d.placed.line) for d in result.disagreements) == [
        ("alice", 6), ("alice", 7), ("bob", 1)]

    [pair] = result.reviewer_pairs
    assert (pair.first, pair.second, pair.agreement.total) == ("alice", "bob", 2)  # ep-1 and ep-2 answers
    assert (pair.agreement.both_fail, pair.agreement.judge_only) == (1, 1)  # alice passes ep-1, bob fails it
    assert [(a.label.episode_id, b.label.passed) for a, b in pair.disagreements] == [("ep-1", False)]


def test_one_reviewer_alone_has_no_pair():
    result = review_agreement([placed("alice", "ep-1", "answer", True)], JUDGED)
    assert result.reviewer_pairs == [] and result.overall.both_pass == 1


def test_labels_naming_nothing_in_the_run_are_errors_with_their_file_and_line():
    wrong_task = PlacedLabel(Path("alice.jsonl"), 4, placed("alice", "ep-3", "answer", True).label.model_copy(
        update={"task_id": "chargeback/dispute"}))
    with pytest.raises(LabelFileError) as raised:
        review_agreement([
            placed("alice", "ep-1", "answer", True, 1),
            placed("alice", "ep-9", "answer", True, 2),
            placed("alice", "ep-2", "tone", True, 3),
            wrong_task,
        ], JUDGED)
    assert str(raised.value).splitlines() == [
        "alice.jsonl:2: episode 'ep-9' is not a judged episode of the run",
        "alice.jsonl:3: item 'tone' is not in the rubric of 'chargeback/dispute' (its items: closed, "
        "refund-call, answer)",
        "alice.jsonl:4: episode 'ep-3' is of task 'pharmacy/refill', not 'chargeback/dispute'",
    ]
