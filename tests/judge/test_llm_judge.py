"""The voting LLM judge with scripted judge models through the gateway: majority, abstention, ties, order."""

from __future__ import annotations

import pytest
from scripted_judges import ScriptedJudge, ballot, fails_answer, garbage, passes, presented_ids

from occusim.judge import PROMPT_VERSION, JudgeError, JudgeModelError, judge


async def test_all_items_pass_and_the_verdict_records_every_vote(task, record, scenario) -> None:
    model = ScriptedJudge(passes)
    verdict = await judge(task, record, scenario=scenario, model=model.model, votes=3, seed=5)
    assert verdict.score == 1.0 and verdict.passed is True and not verdict.partial
    assert [item.id for item in verdict.items] == ["released", "order", "answer", "verification_plan"]
    plan = verdict.item("verification_plan")
    assert plan.kind == "llm" and plan.weight == 1 and len(plan.checks) == 1 and not plan.deterministic
    assert verdict.item("released").deterministic
    assert verdict.judge_model == model.model and verdict.prompt_version == PROMPT_VERSION
    assert verdict.votes == 3 and verdict.seed == 5 and verdict.usage.calls == 3
    assert sorted(r["seed"] for r in model.requests) == [5, 6, 7]
    check = verdict.item("answer").checks[1]
    assert check.id == "answer#1" and check.description == "The final answer names shipment SH-1"
    assert [v.vote for v in check.votes] == [0, 1, 2] and all(v.passed for v in check.votes)
    assert check.reason == "pass answer#1" and check.evidence_steps == [3]
    round_trip = type(verdict).model_validate_json(verdict.model_dump_json())
    assert round_trip.item("answer").checks[1].votes[2].reason == "pass answer#1"


async def test_two_of_three_votes_decide(task, record) -> None:
    model = ScriptedJudge(passes, fails_answer, passes)
    verdict = await judge(task, record, model=model.model, votes=3)
    check = verdict.item("answer").checks[0]
    assert check.passed is True and not check.tie and check.abstentions == 0
    assert [v.passed for v in check.votes] == [True, False, True]
    assert check.reason == "pass answer#0"  # the reason comes from the winning side

    model = ScriptedJudge(fails_answer, fails_answer, passes)
    verdict = await judge(task, record, model=model.model, votes=3)
    check = verdict.item("answer").checks[0]
    assert check.passed is False and check.reason == "fail answer#0"
    assert verdict.item("answer").passed is False  # chained: one failing check fails the item
    assert verdict.score == pytest.approx(4 / 5) and verdict.passed is False  # weights 2 + 1 + 1 of 5


async def test_unparseable_vote_is_an_abstention_not_a_fail(task, record) -> None:
    model = ScriptedJudge(garbage, passes, passes)
    verdict = await judge(task, record, model=model.model, votes=3)
    check = verdict.item("answer").checks[0]
    assert check.passed is True and check.abstentions == 1
    assert check.votes[0].passed is None and "unparseable output" in check.votes[0].reason
    assert verdict.abstentions == 3  # one per llm check
    assert verdict.passed is True and verdict.ties == []


async def test_a_check_missing_from_a_vote_abstains_on_that_check_only(task, record) -> None:
    def skip_plan(request: dict) -> dict:
        return ballot(request, lambda check_id: None if check_id.startswith("verification_plan") else True)

    model = ScriptedJudge(skip_plan, passes, fails_answer)
    verdict = await judge(task, record, model=model.model, votes=3)
    plan = verdict.item("verification_plan").checks[0]
    assert plan.abstentions == 1 and "no verdict for this check" in plan.votes[0].reason
    assert plan.passed is True  # 2 pass votes cast, 0 fail
    assert verdict.item("answer").checks[0].abstentions == 0


async def test_a_list_of_verdicts_is_read_too_and_conflicting_answers_abstain(task, record) -> None:
    def as_list(request: dict) -> dict:
        entries = [
            {"check_id": i, "reason": "listed", "evidence_steps": [2, 99], "passed": True}
            for i in presented_ids(request)
        ]
        entries.append(
            {"check_id": "answer#1", "reason": "changed my mind", "evidence_steps": [], "passed": False}
        )
        return {"verdicts": entries}

    model = ScriptedJudge(as_list)
    verdict = await judge(task, record, model=model.model, votes=1)
    assert verdict.item("answer").checks[0].passed is True
    assert verdict.item("answer").checks[0].evidence_steps == [2]  # step 99 does not exist
    conflicted = verdict.item("answer").checks[1]
    assert conflicted.abstentions == 1 and "both ways" in conflicted.votes[0].reason and conflicted.tie


async def test_one_pass_one_fail_one_abstain_is_a_flagged_tie(task, record) -> None:
    model = ScriptedJudge(passes, fails_answer, garbage)
    verdict = await judge(task, record, model=model.model, votes=3)
    check = verdict.item("answer").checks[0]
    assert check.tie is True and check.passed is False and check.abstentions == 1
    assert "tie (1 pass, 1 fail, 1 abstained)" in check.reason
    assert verdict.ties == ["answer#0"]
    assert verdict.item("answer").passed is False and verdict.passed is False


async def test_all_votes_abstaining_is_a_tie_not_a_fail_by_default(task, record) -> None:
    model = ScriptedJudge(garbage)
    verdict = await judge(task, record, model=model.model, votes=3)
    assert sorted(verdict.ties) == ["answer#0", "answer#1", "verification_plan#0"]
    assert verdict.abstentions == 9
    assert all(check.tie and check.passed is False for check in verdict.item("answer").checks)


async def test_each_vote_sees_its_own_order_and_verdicts_map_back_by_id(task, record) -> None:
    # Answers by position would scramble the outcome; answers by id must not depend on the order.
    def by_id(request: dict) -> dict:
        return ballot(request, lambda check_id: check_id != "answer#1")

    model = ScriptedJudge(by_id)
    verdict = await judge(task, record, model=model.model, votes=3, seed=11)
    orders = model.orders()
    assert len({tuple(order) for order in orders}) == 3
    assert all(sorted(order) == ["answer#0", "answer#1", "verification_plan#0"] for order in orders)
    assert [c.passed for c in verdict.item("answer").checks] == [True, False]
    assert verdict.item("verification_plan").passed is True
    positions = [vote.position for vote in verdict.item("answer").checks[1].votes]
    assert positions == [order.index("answer#1") for order in orders]
    # The prompt lists the checks in the presented order too.
    for messages, request in zip(model.messages, model.requests, strict=True):
        text = messages[1]["content"]
        listed = [text.index(f"check_id `{check_id}`") for check_id in presented_ids(request)]
        assert listed == sorted(listed)

    again = ScriptedJudge(by_id)
    await judge(task, record, model=again.model, votes=3, seed=11)
    assert again.orders() == orders  # seeded


async def test_skip_llm_items_scores_only_the_deterministic_items(task, record) -> None:
    model = ScriptedJudge(passes)
    verdict = await judge(task, record, model=model.model, llm_items="skip")
    assert model.requests == []
    assert verdict.partial is True and verdict.judge_model is None and verdict.votes == 0
    assert verdict.score == 1.0  # released (2) and order (1) pass; llm items are not counted
    assert verdict.passed is None  # the unjudged items could still fail the 1.0 threshold
    assert verdict.item("answer").passed is None and verdict.item("verification_plan").passed is None
    assert verdict.item("answer").checks[0].reason == "not judged (llm items skipped)"


async def test_deterministic_only_task_needs_no_model(task, record) -> None:
    only_state = task.model_copy(deep=True)
    only_state.rubric.items = only_state.rubric.items[:2]
    only_state.verification_plan = None
    verdict = await judge(only_state, record, model="scripted/never-registered")
    assert verdict.judge_model is None and verdict.passed is True and verdict.usage.calls == 0


async def test_model_defaults_to_the_judge_role(task, record, monkeypatch) -> None:
    model = ScriptedJudge(passes)
    monkeypatch.setenv("OCCUSIM_JUDGE_MODEL", model.model)
    verdict = await judge(task, record)
    assert verdict.judge_model == model.model and len(model.requests) == 3


async def test_provider_failure_raises_instead_of_scoring(task, record, monkeypatch) -> None:
    def outage(request: dict) -> dict:
        raise TimeoutError("judge endpoint timed out")

    monkeypatch.setenv("OCCUSIM_LLM_RETRIES", "1")
    model = ScriptedJudge(outage)
    with pytest.raises(
        JudgeModelError, match="judge model 'scripted/.*' failed on task 'customs-desk/release-sh1'"
    ):
        await judge(task, record, model=model.model, votes=2)


async def test_invalid_arguments_are_refused(task, record) -> None:
    with pytest.raises(JudgeError, match="votes must be between 1 and 15"):
        await judge(task, record, votes=0)
    other = record.model_copy(update={"task_id": "customs-desk/other"})
    with pytest.raises(JudgeError, match="is a run of task 'customs-desk/other'"):
        await judge(task, other, llm_items="skip")
