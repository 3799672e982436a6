"""Score arithmetic: chained items, weighted shares, thresholds and partial verdicts, on worked examples."""

from __future__ import annotations

import pytest

from occusim.environments import EpisodeRecord, ReferenceStep, StateItem, StepRecord, ToolCallItem
from occusim.judge import CheckVerdict, ItemVerdict, check_item, score_items


def item(item_id: str, weight: float, *checks: bool | None) -> ItemVerdict:
    verdicts = [
        CheckVerdict(index=i, id=f"{item_id}#{i}", description="", passed=passed)
        for i, passed in enumerate(checks)
    ]
    chained = None if None in checks else all(checks)
    if False in checks:
        chained = False
    return ItemVerdict(
        id=item_id, kind="state", weight=weight, passed=chained, checks=verdicts, deterministic=True
    )


RECORD = EpisodeRecord(
    id="ep-1",
    task_id="customs/release",
    scenario_id="customs",
    state={"shipment": {"status": "released", "duty_paid": 312.5}},
    steps=[
        StepRecord(index=0, tool="verify_identity", arguments={"id": "SH-1"}, observation={}),
        StepRecord(index=1, tool="release_shipment", arguments={"id": "SH-1"}, observation={}),
    ],
)


def test_weights_2_1_1_with_one_chained_item_failing_one_of_two_checks() -> None:
    # The weight-1 item fails one of its two checks, so it scores nothing: (2 + 1) / 4.
    score, passed = score_items([item("a", 2, True), item("b", 1, True, False), item("c", 1, True)])
    assert score == 0.75
    assert passed is False
    assert score_items([item("a", 2, True), item("b", 1, True, False), item("c", 1, True)], 0.75) == (
        0.75,
        True,
    )


def test_deterministic_chained_item_on_a_record() -> None:
    both = StateItem.model_validate(
        {
            "id": "released",
            "description": "released with duty",
            "weight": 2,
            "checks": [
                {"pointer": "/shipment/status", "op": "eq", "value": "released"},
                {"pointer": "/shipment/duty_paid", "op": "ge", "value": 400},
            ],
        }
    )
    verdict = check_item(both, RECORD)
    assert [c.passed for c in verdict.checks] == [True, False]
    assert verdict.passed is False and verdict.weight == 2 and verdict.deterministic
    order = ToolCallItem.model_validate(
        {
            "id": "order",
            "description": "",
            "checks": [{"tool": "release_shipment", "after": "verify_identity"}],
        }
    )
    assert check_item(order, RECORD).passed is True
    assert score_items([check_item(both, RECORD), check_item(order, RECORD)]) == (pytest.approx(1 / 3), False)


def test_check_item_replays_a_reference_solution() -> None:
    order = ToolCallItem.model_validate(
        {
            "id": "order",
            "description": "",
            "checks": [{"tool": "release_shipment", "after": "verify_identity"}],
        }
    )
    reference = [
        ReferenceStep(tool="release_shipment", observation={}),
        ReferenceStep(tool="verify_identity", observation={}),
    ]
    assert check_item(order, steps=reference).passed is False
    assert check_item(order, steps=list(reversed(reference))).passed is True


def test_all_pass_and_float_weights_reach_the_threshold() -> None:
    assert score_items([item("a", 1, True), item("b", 3, True, True)]) == (1.0, True)
    score, passed = score_items([item("a", 0.1, True), item("b", 0.2, True), item("c", 0.7, False)], 0.3)
    assert score == pytest.approx(0.3) and passed is True


def test_partial_verdicts_decide_only_when_the_unjudged_items_cannot_matter() -> None:
    # Judged: a (2, passed), b (1, failed). Unjudged: c (1).
    items = [item("a", 2, True), item("b", 1, False), item("c", 1, None)]
    score, passed = score_items(items, 1.0)
    assert score == pytest.approx(2 / 3) and passed is False  # b already failed: 1.0 is out of reach
    assert score_items(items, 0.5)[1] is True  # 2/4 is reached even if c fails
    assert score_items(items, 0.7)[1] is None  # 2/4 if c fails, 3/4 if it passes
    assert score_items([item("c", 1, None)], 1.0) == (0.0, None)
