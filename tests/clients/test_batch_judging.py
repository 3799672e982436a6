"""How `occusim run` turns verdicts into rows: unjudged episodes apart, the judge's abstentions and ties counted."""

from __future__ import annotations

from pathlib import Path

import pytest

from occusim.analysis import load_rows
from occusim.clients.cli import main
from occusim.llm import scripted_model
from tests.helpers import TASK_A, TASK_B, ReplayWorld, ScriptedAgent


def replay(task_id: str, seed: int | None) -> str:
    return "replay"


def judge_by_task(verdict_for_a: object, name: str | None = None) -> str:
    """A judge whose answers never parse on task B's episodes; on task A's, `verdict_for_a` decides."""

    def respond(messages: list[dict], request: dict) -> object:
        if "chargeback analyst" in messages[1]["content"]:
            return "Looks fine to me."
        ids = request["response_schema"]["properties"]["verdicts"]["required"]
        passed = verdict_for_a(request) if callable(verdict_for_a) else verdict_for_a
        if passed is None:
            return "no idea"
        return {"verdicts": {i: {"passed": passed, "reason": "r", "evidence_steps": []} for i in ids}}

    return scripted_model(respond, name=name)


def run(out: Path, judge: str, *extra: str, agent: str | None = None, world: str | None = None) -> int:
    return main([
        "run", "--agent-model", agent or ScriptedAgent(replay).model, "--world-model", world or ReplayWorld().model,
        "--judge-model", judge, "--tasks", f"{TASK_A},{TASK_B}", "--faults", "E0", "--trials", "1",
        "--out", str(out), "--no-progress", *extra,
    ])


def test_an_episode_the_judge_could_not_decide_is_unjudged_not_failed(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("OCCUSIM_JUDGE_REASKS", "1")
    out = tmp_path / "out"
    agent, world = ScriptedAgent(replay, name="unjudged-agent").model, ReplayWorld(name="unjudged-world").model
    assert run(out, judge_by_task(True, name="unjudged-judge"), agent=agent, world=world) == 0
    rows = {row.task_id: row for row in load_rows(out)[1]}

    judged = rows[TASK_A]
    assert judged.status == "ok" and judged.passed is True and judged.scored
    assert judged.judge_abstentions == 0 and judged.judge_ties == 0 and judged.unjudged_checks == []
    checks = [check.id for item in judged.verdict.items if item.kind == "llm" for check in item.checks]
    assert judged.judge_checks == len(checks) >= 2 and judged.judge_check_votes == 3 * len(checks)

    undecided = rows[TASK_B]
    assert undecided.status == "unjudged" and not undecided.scored
    assert undecided.passed is None and undecided.score is None and undecided.verdict is not None
    assert sorted(undecided.unjudged_checks) == sorted(undecided.verdict.unjudged_checks)
    assert undecided.unjudged_checks and undecided.judge_abstentions == 3 * len(undecided.unjudged_checks)
    assert undecided.judge_reasks == 3 and undecided.usage["judge"].calls == 6  # 3 votes, each asked twice
    assert undecided.episode_id and undecided.agent_ended == "submitted"

    # Resuming does not run it again: the episode was fine, only the judge could not read it.
    before = (out / "results.jsonl").read_text()
    scripted_model(lambda messages, request: pytest.fail("no episode should run"), name="unjudged-agent")
    assert run(out, "scripted/unjudged-judge", agent=agent, world=world) == 0
    assert (out / "results.jsonl").read_text() == before


@pytest.mark.parametrize(("votes", "expected"), [(3, "fail"), (2, "tie")])
def test_abstentions_and_ties_reach_the_row(tmp_path: Path, votes: int, expected: str) -> None:
    def one_pass_then_unreadable(request: dict) -> bool | None:
        # Vote 0 passes; the other votes cannot be read on any attempt.
        return True if request["seed"] in first_vote_seeds else None

    from occusim.judge import vote_seed

    first_vote_seeds = {vote_seed(0, 0, attempt) for attempt in range(3)}
    out = tmp_path / "out"
    assert run(out, judge_by_task(one_pass_then_unreadable), "--judge-votes", str(votes)) == 0
    row = {row.task_id: row for row in load_rows(out)[1]}[TASK_A]
    assert row.status == "ok" and row.passed is False  # one pass against unreadable votes is not a pass
    assert row.judge_abstentions == row.judge_checks * (votes - 1) and row.judge_check_votes == row.judge_checks * votes
    assert row.judge_ties == (row.judge_checks if expected == "tie" else 0)


def test_the_judge_of_a_run_is_shown_the_exemplars_of_the_folder(tmp_path: Path) -> None:
    from occusim.environments import Catalog, Exemplar, load_catalog, write_exemplars

    full, tasks = load_catalog(), Catalog()
    for scenario in {full.task(TASK_A).scenario, full.task(TASK_B).scenario}:
        tasks.add(full.scenario(scenario or ""), full.origins[scenario or ""])
    seen: list[str] = []

    def respond(messages: list[dict], request: dict) -> object:
        seen.append(messages[1]["content"])
        ids = request["response_schema"]["properties"]["verdicts"]["required"]
        return {"verdicts": {i: {"passed": True, "reason": "r", "evidence_steps": []} for i in ids}}

    item = next(i.id for i in full.task(TASK_A).rubric.items if i.kind == "llm")
    folder = tmp_path / "calibration"
    write_exemplars(folder, TASK_A, [Exemplar(item_id=item, excerpt="a team's own exemplar", passed=False)])
    out = tmp_path / "out"
    world = ReplayWorld(catalog=tasks).model
    assert run(out, scripted_model(respond), "--exemplars", str(folder), "--judge-votes", "1", world=world) == 0
    task_a = [prompt for prompt in seen if "a team's own exemplar" in prompt]
    assert len(task_a) == 1 and len(seen) == 2
    assert load_rows(out)[0].exemplars == str(folder)
