"""The voting LLM judge with scripted judge models through the gateway: majority, abstention, ties, order."""

from __future__ import annotations

import pytest

from occusim.judge import PROMPT_VERSION, JudgeError, JudgeModelError, JudgeSettings, judge, vote_seed
from tests.helpers import (
    ScriptedJudge,
    ballot,
    cut_short,
    fails_answer,
    garbage,
    garbage_then,
    passes,
    presented_ids,
)

LLM_CHECKS = ["answer#0", "answer#1", "verification_plan#0"]


async def test_all_items_pass_and_the_verdict_records_every_vote(task, record, scenario) -> None:
    model = ScriptedJudge(passes, seed=5)
    verdict = await judge(task, record, scenario=scenario, model=model.model, votes=3, seed=5)
    assert verdict.score == 1.0 and verdict.passed is True and not verdict.partial
    assert [item.id for item in verdict.items] == ["released", "order", "answer", "verification_plan"]
    plan = verdict.item("verification_plan")
    assert plan.kind == "llm" and plan.weight == 1 and len(plan.checks) == 1 and not plan.deterministic
    assert verdict.item("released").deterministic
    assert verdict.judge_model == model.model and verdict.prompt_version == PROMPT_VERSION
    assert verdict.votes == 3 and verdict.seed == 5 and verdict.usage.calls == 3
    assert sorted(r["seed"] for r in model.requests) == sorted(vote_seed(5, vote) for vote in range(3))
    assert verdict.unjudged_checks == [] and verdict.reasks == 0 and verdict.settings == JudgeSettings()
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


async def test_an_unparseable_vote_is_asked_again_then_counts_as_a_fail_vote(task, record) -> None:
    # OccuBench's rule: one pass and two unreadable votes is 1-2, a fail (it used to pass on the one vote).
    model = ScriptedJudge(passes, garbage, garbage)
    verdict = await judge(task, record, model=model.model, votes=3)
    check = verdict.item("answer").checks[0]
    assert check.passed is False and not check.unjudged and not check.tie and check.abstentions == 2
    assert [v.passed for v in check.votes] == [True, None, None]
    assert "unparseable output" in check.votes[1].reason and check.votes[1].attempts == 3
    assert "1 pass, 0 fail, 2 abstained" in check.reason
    assert verdict.passed is False and verdict.unjudged_checks == [] and verdict.abstentions == 6
    # Each unreadable vote was asked twice more (the default), each time as a new sample.
    assert len(model.requests_of(1)) == 3 and len(model.requests_of(0)) == 1
    assert verdict.reasks == 4 and verdict.usage.calls == 7
    assert len({r["seed"] for r in model.requests}) == 7


async def test_a_vote_readable_when_asked_again_counts_as_given(task, record) -> None:
    model = ScriptedJudge(garbage_then(passes), passes, fails_answer)
    verdict = await judge(task, record, model=model.model, votes=3)
    check = verdict.item("answer").checks[0]
    assert [v.passed for v in check.votes] == [True, True, False] and check.abstentions == 0
    assert check.votes[0].attempts == 2 and check.votes[1].attempts == 1
    assert check.passed is True and verdict.reasks == 1 and verdict.abstentions == 0


async def test_reasks_are_bounded_and_configurable(task, record) -> None:
    for reasks in (0, 1, 4):
        model = ScriptedJudge(garbage)
        verdict = await judge(task, record, model=model.model, votes=3, settings=JudgeSettings(reasks=reasks))
        assert len(model.requests) == 3 * (reasks + 1) and verdict.reasks == 3 * reasks
        assert sorted({r["attempt"] for r in model.requests}) == list(range(reasks + 1))
    with pytest.raises(ValueError, match="less than or equal to 10"):
        JudgeSettings(reasks=11)


async def test_reasks_come_from_the_environment_when_not_given(task, record, monkeypatch) -> None:
    monkeypatch.setenv("OCCUSIM_JUDGE_REASKS", "1")
    model = ScriptedJudge(garbage)
    verdict = await judge(task, record, model=model.model, votes=2)
    assert len(model.requests) == 4 and verdict.settings.reasks == 1
    monkeypatch.setenv("OCCUSIM_JUDGE_REASKS", "many")
    with pytest.raises(JudgeError, match=r"reasks \(from \$OCCUSIM_JUDGE_REASKS\)"):
        await judge(task, record, model=model.model)


async def test_a_check_missing_from_a_vote_abstains_on_that_check_only(task, record) -> None:
    def skip_plan(request: dict) -> dict:
        return ballot(request, lambda check_id: None if check_id.startswith("verification_plan") else True)

    model = ScriptedJudge(skip_plan, passes, fails_answer)
    verdict = await judge(task, record, model=model.model, votes=3)
    plan = verdict.item("verification_plan").checks[0]
    assert plan.abstentions == 1 and "no verdict for this check" in plan.votes[0].reason
    assert plan.passed is True  # 2 pass votes against 1 abstention counted as a fail
    answer = verdict.item("answer").checks[0]
    assert answer.abstentions == 0 and answer.votes[0].attempts == 1  # the first usable answer is kept
    assert len(model.requests_of(0)) == 3  # asked again for the missing check only while it stayed missing


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
    assert conflicted.abstentions == 1 and "both ways" in conflicted.votes[0].reason
    assert conflicted.unjudged and conflicted.passed is None  # its only vote never answered it cleanly
    assert verdict.unjudged_checks == ["answer#1"] and verdict.unjudged


async def test_equal_pass_and_fail_counts_are_a_flagged_tie(task, record) -> None:
    model = ScriptedJudge(passes, fails_answer)
    verdict = await judge(task, record, model=model.model, votes=2)
    check = verdict.item("answer").checks[0]
    assert check.tie is True and check.passed is False and "tie (1 pass, 1 fail, 0 abstained" in check.reason
    assert verdict.ties == ["answer#0"] and verdict.passed is False

    # An abstention weighs as a fail vote: two passes against one fail and one abstention is a tie.
    model = ScriptedJudge(passes, passes, fails_answer, garbage)
    verdict = await judge(task, record, model=model.model, votes=4)
    check = verdict.item("answer").checks[0]
    assert check.tie and check.abstentions == 1 and "tie (2 pass, 1 fail, 1 abstained" in check.reason
    assert verdict.item("answer").checks[1].passed is True and not verdict.item("answer").checks[1].tie


async def test_a_check_no_vote_could_answer_is_unjudged_not_failed(task, record) -> None:
    model = ScriptedJudge(garbage)
    verdict = await judge(task, record, model=model.model, votes=3)
    assert sorted(verdict.unjudged_checks) == LLM_CHECKS and verdict.unjudged
    assert verdict.abstentions == 9 and verdict.ties == [] and verdict.reasks == 6
    assert all(check.unjudged and check.passed is None for check in verdict.item("answer").checks)
    assert "not judged: none of the 3 votes gave a usable answer" in verdict.item("answer").checks[0].reason
    # The deterministic items passed; the undecided ones could still fail it: no outcome.
    assert verdict.item("answer").passed is None and verdict.passed is None


async def test_undecided_checks_that_cannot_change_a_failure_leave_it_a_failure(task, record) -> None:
    # The state item fails on its own, so whatever the undecided llm checks would say, the episode fails:
    # it stays a scored failure instead of leaving the denominator.
    failing = record.model_copy(update={"state": record.initial_state})
    verdict = await judge(task, failing, model=ScriptedJudge(garbage).model, votes=3)
    assert sorted(verdict.unjudged_checks) == LLM_CHECKS
    assert verdict.passed is False and not verdict.unjudged


async def test_the_fail_rule_counts_a_check_without_usable_votes_as_failed(task, record) -> None:
    model = ScriptedJudge(garbage)
    settings = JudgeSettings(on_no_usable_vote="fail", reasks=0)
    verdict = await judge(task, record, model=model.model, votes=3, settings=settings)
    assert verdict.unjudged_checks == [] and verdict.abstentions == 9 and len(model.requests) == 3
    assert all(check.passed is False and not check.unjudged for check in verdict.item("answer").checks)
    assert verdict.passed is False and verdict.settings.on_no_usable_vote == "fail"


async def test_an_answer_cut_at_the_token_limit_is_unusable_and_asked_again(task, record) -> None:
    model = ScriptedJudge(cut_short, passes, passes)
    verdict = await judge(task, record, model=model.model, votes=3)
    check = verdict.item("answer").checks[0]
    assert check.votes[0].passed is None and "cut short at the token limit" in check.votes[0].reason
    assert check.abstentions == 1 and check.passed is True and len(model.requests_of(0)) == 3


async def test_votes_sample_at_the_provider_default_with_no_token_cap(task, record) -> None:
    model = ScriptedJudge(passes, seed=9)
    await judge(task, record, model=model.model, votes=3, seed=9)
    assert all(r["temperature"] is None and r["max_tokens"] is None for r in model.requests)
    assert sorted(r["vote"] for r in model.requests) == [0, 1, 2]

    model = ScriptedJudge(passes)
    settings = JudgeSettings(temperature=0.7, max_tokens=50_000)
    verdict = await judge(task, record, model=model.model, votes=2, settings=settings)
    assert all(r["temperature"] == 0.7 and r["max_tokens"] == 50_000 for r in model.requests)
    assert verdict.settings.temperature == 0.7


async def test_vote_seeds_keep_each_vote_its_own_cache_entry(tmp_path) -> None:
    from occusim.llm import ResponseCache, complete, scripted_model

    cache = ResponseCache(tmp_path / "cache.sqlite")
    model = scripted_model(lambda messages, request: f"answer to seed {request['seed']}")
    messages = [{"role": "user", "content": "judge this episode"}]

    async def ask(vote: int):
        return await complete(model, messages, seed=vote_seed(3, vote), temperature=None, role="judge", cache=cache)

    first = [await ask(vote) for vote in range(3)]
    again = [await ask(vote) for vote in range(3)]
    assert len({c.text for c in first}) == 3 and not any(c.cached for c in first)
    assert [c.text for c in again] == [c.text for c in first] and all(c.cached for c in again)


async def test_each_vote_sees_its_own_order_and_verdicts_map_back_by_id(task, record) -> None:
    # Answers by position would scramble the outcome; answers by id must not depend on the order.
    def by_id(request: dict) -> dict:
        return ballot(request, lambda check_id: check_id != "answer#1")

    model = ScriptedJudge(by_id, seed=11)
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

    again = ScriptedJudge(by_id, seed=11)
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


async def test_a_malformed_judge_answer_is_an_outage_with_a_sanitised_message(task, record, monkeypatch) -> None:
    from tests.helpers import STUB_KEY, Reply, completion_body, provider_stub

    monkeypatch.setenv("OCCUSIM_LLM_RETRIES", "2")
    with provider_stub(Reply(completion_body(None, finish_reason="length"))) as stub:
        with pytest.raises(JudgeModelError, match=r"provider: ProviderAnswerError after 2 attempts"):
            await judge(task, record, model=stub.model, votes=1)
    assert len(stub.requests) == 2
    body = {"error": {"message": f"Incorrect API key provided: {STUB_KEY}", "type": "invalid_request_error"}}
    with provider_stub(Reply(body, status=401)) as stub:
        with pytest.raises(JudgeModelError) as raised:
            await judge(task, record, model=stub.model, votes=1)
    assert "HTTP 401 AuthenticationError" in str(raised.value) and STUB_KEY not in str(raised.value)


async def test_invalid_arguments_are_refused(task, record) -> None:
    with pytest.raises(JudgeError, match="votes must be between 1 and 15"):
        await judge(task, record, votes=0)
    other = record.model_copy(update={"task_id": "customs-desk/other"})
    with pytest.raises(JudgeError, match="is a run of task 'customs-desk/other'"):
        await judge(task, other, llm_items="skip")
