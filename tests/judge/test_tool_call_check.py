"""tool_call checks: which calls count, partial argument matching, and before/after ordering."""

from __future__ import annotations

from occusim.environments import InjectedFault, ReferenceStep, StepRecord, ToolCallCheck
from occusim.judge import check_tool_call


def step(index: int, tool: str, **arguments: object) -> StepRecord:
    return StepRecord(index=index, tool=tool, arguments=arguments, observation={"ok": True})


STEPS = [
    step(0, "lookup_shipment", shipment_id="SH-1"),
    step(
        1,
        "verify_identity",
        shipment_id="SH-1",
        document={"type": "passport", "number": "X1", "country": "FR"},
    ),
    step(2, "release_shipment", shipment_id="SH-1", lines=[{"sku": "A", "qty": 2}, {"sku": "B", "qty": 1}]),
]


def verdict(steps: list, **fields: object):
    return check_tool_call(ToolCallCheck(**fields), steps, index=1, item_id="release")


def test_called_and_never_called() -> None:
    called = verdict(STEPS, tool="verify_identity")
    assert called.passed is True and called.evidence_steps == [1] and called.id == "release#1"
    missing = verdict(STEPS, tool="hold_shipment")
    assert missing.passed is False and missing.reason == "hold_shipment was never called"


def test_partial_arguments_match_recursively() -> None:
    assert verdict(STEPS, tool="verify_identity", arguments_match={"shipment_id": "SH-1"}).passed is True
    nested = verdict(STEPS, tool="verify_identity", arguments_match={"document": {"type": "passport"}})
    assert nested.passed is True
    wrong = verdict(STEPS, tool="verify_identity", arguments_match={"document": {"type": "visa"}})
    assert wrong.passed is False and "none with" in wrong.reason and "passport" in wrong.reason
    absent_key = verdict(
        STEPS, tool="lookup_shipment", arguments_match={"shipment_id": "SH-1", "force": True}
    )
    assert absent_key.passed is False


def test_list_arguments_match_element_by_element() -> None:
    partial = {"lines": [{"sku": "A"}, {"sku": "B", "qty": 1}]}
    assert verdict(STEPS, tool="release_shipment", arguments_match=partial).passed is True
    assert verdict(STEPS, tool="release_shipment", arguments_match={"lines": [{"sku": "A"}]}).passed is False
    swapped = {"lines": [{"sku": "B"}, {"sku": "A"}]}
    assert verdict(STEPS, tool="release_shipment", arguments_match=swapped).passed is False


def test_argument_types_are_json_types() -> None:
    steps = [step(0, "set_dose", dose_mg=40, urgent=True)]
    assert verdict(steps, tool="set_dose", arguments_match={"dose_mg": 40.0}).passed is True
    assert verdict(steps, tool="set_dose", arguments_match={"dose_mg": "40"}).passed is False
    assert verdict(steps, tool="set_dose", arguments_match={"urgent": 1}).passed is False


def test_before_and_after() -> None:
    assert verdict(STEPS, tool="verify_identity", before="release_shipment").passed is True
    assert verdict(STEPS, tool="release_shipment", after="verify_identity").passed is True
    both = verdict(STEPS, tool="verify_identity", after="lookup_shipment", before="release_shipment")
    assert both.passed is True and both.evidence_steps == [0, 1, 2]

    late = verdict(STEPS, tool="release_shipment", before="verify_identity")
    assert late.passed is False and "first called earlier, at step 1" in late.reason
    early = verdict(STEPS, tool="lookup_shipment", after="verify_identity")
    assert early.passed is False and "before verify_identity was first called at step 1" in early.reason
    never = verdict(STEPS, tool="verify_identity", before="hold_shipment")
    assert never.passed is False and "hold_shipment was never called" in never.reason


def test_out_of_order_call_is_not_repaired_by_repeating_it() -> None:
    steps = [step(0, "release_shipment"), step(1, "verify_identity"), step(2, "release_shipment")]
    assert verdict(steps, tool="verify_identity", before="release_shipment").passed is False


def test_after_accepts_a_follow_up_call() -> None:
    # Reading the metrics before a rollback and again after it is the follow-up `after` asks for.
    steps = [step(0, "get_metrics"), step(1, "rollback"), step(2, "get_metrics")]
    follow_up = verdict(steps, tool="get_metrics", after="rollback")
    assert follow_up.passed is True and follow_up.evidence_steps == [1, 2]
    assert verdict(steps[:2], tool="get_metrics", after="rollback").passed is False


def test_ordering_uses_the_first_matching_call() -> None:
    steps = [
        step(0, "approve", claim="CL-2"),
        step(1, "verify", claim="CL-1"),
        step(2, "approve", claim="CL-1"),
    ]
    assert verdict(steps, tool="approve", arguments_match={"claim": "CL-1"}, after="verify").passed is True
    assert verdict(steps, tool="approve", arguments_match={"claim": "CL-2"}, after="verify").passed is False


def test_injected_faults_count_rejected_calls_do_not() -> None:
    timed_out = StepRecord(
        index=0,
        tool="release_shipment",
        arguments={"shipment_id": "SH-1"},
        observation={"error": "timeout"},
        is_error=True,
        fault=InjectedFault(kind="explicit", label="timeout"),
    )
    rejected = StepRecord(
        index=1,
        tool="verify_identity",
        arguments={"shipment": 3},
        observation={"error": "invalid arguments"},
        is_error=True,
        error="shipment: unknown field",
    )
    domain_error = StepRecord(
        index=2,
        tool="lookup_shipment",
        arguments={"shipment_id": "SH-9"},
        observation={"error": {"code": "NOT_FOUND"}},
        is_error=True,
    )
    steps = [timed_out, rejected, domain_error]
    assert verdict(steps, tool="release_shipment").passed is True
    assert verdict(steps, tool="lookup_shipment").passed is True
    not_counted = verdict(steps, tool="verify_identity")
    assert not_counted.passed is False and "1 rejected call(s)" in not_counted.reason
    assert verdict(steps, tool="release_shipment", after="verify_identity").passed is False


def test_reference_solution_steps_are_checked_by_position() -> None:
    reference = [
        ReferenceStep(tool="verify_identity", arguments={"shipment_id": "SH-1"}, observation={"ok": True}),
        ReferenceStep(tool="release_shipment", arguments={"shipment_id": "SH-1"}, observation={"ok": True}),
    ]
    result = verdict(
        reference, tool="release_shipment", arguments_match={"shipment_id": "SH-1"}, after="verify_identity"
    )
    assert result.passed is True and result.evidence_steps == [0, 1]
