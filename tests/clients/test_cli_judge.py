"""`occusim judge` and `occusim judge-agreement`: trajectory files, stored episodes, expert labels."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from occusim.clients.cli import main
from occusim.environments import EpisodeRecord, StepRecord
from occusim.llm import scripted_model
from occusim.server import Store

TASK_ID = "example-refill-desk/one-refill"
ANSWER_ITEM = {
    "id": "answer",
    "kind": "llm",
    "description": "the answer",
    "checks": ["The final answer says 21 tablets were dispensed"],
}


def record(episode_id: str = "ep-1", dispensed: bool = True) -> EpisodeRecord:
    before = {"prescriptions": {"101": {"drug": "amoxicillin 500 mg", "refills_left": 2}}}
    after = {"prescriptions": {"101": {"drug": "amoxicillin 500 mg", "refills_left": 1 if dispensed else 2}}}
    return EpisodeRecord(
        id=episode_id,
        task_id=TASK_ID,
        scenario_id="example-refill-desk",
        initial_state=before,
        state=after,
        steps=[
            StepRecord(
                index=0, tool="get_prescription", arguments={"rx_id": 101}, observation={"rx_id": 101}
            ),
            StepRecord(index=1, tool="dispense", arguments={"rx_id": 101, "quantity": 21}, observation={}),
        ],
        final_answer="Dispensed 21 tablets; 1 refill left.",
    )


@pytest.fixture
def task_data(scenario_data) -> dict:
    """The shared example task with an llm item added."""
    data = scenario_data()
    data["tasks"][0]["rubric"]["items"].append(ANSWER_ITEM)
    return data


@pytest.fixture
def source(task_data, write_scenario_yaml) -> str:
    return str(write_scenario_yaml(task_data))


def passing_judge(messages: list[dict], request: dict) -> dict:
    ids = request["response_schema"]["properties"]["verdicts"]["required"]
    return {"verdicts": {i: {"reason": "confirmed", "evidence_steps": [1], "passed": True} for i in ids}}


def test_judges_a_trajectory_file_as_json(tmp_path: Path, source: str, capsys) -> None:
    trajectory = tmp_path / "ep-1.json"
    trajectory.write_text(record().model_dump_json(), encoding="utf-8")
    model = scripted_model(passing_judge)
    code = main(
        ["judge", str(trajectory), "--source", source, "--no-bundled", "--judge-model", model, "--json"]
    )
    verdict = json.loads(capsys.readouterr().out)
    assert code == 0
    assert verdict["passed"] is True and verdict["score"] == 1.0 and verdict["judge_model"] == model
    assert [item["id"] for item in verdict["items"]] == ["refill-counted", "read-first", "answer"]
    assert len(verdict["items"][2]["checks"][0]["votes"]) == 3


def test_prints_a_readable_table(tmp_path: Path, source: str, capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "240")
    trajectory = tmp_path / "ep-1.json"
    trajectory.write_text(record(dispensed=False).model_dump_json(), encoding="utf-8")
    code = main(["judge", str(trajectory), "--source", source, "--no-bundled", "--skip-llm"])
    out = capsys.readouterr().out
    assert code == 0
    assert TASK_ID in out and "UNDECIDED" not in out and "FAILED" in out
    assert "partial: llm items not judged" in out
    assert "/prescriptions/101/refills_left = 2, expected 1" in out and "not judged" in out


def test_judges_a_stored_episode_and_saves_the_verdict(tmp_path: Path, source: str, capsys) -> None:
    db = tmp_path / "episodes.db"

    async def store_episode() -> None:
        full = record("ep-stored")
        async with Store(db) as store:
            await store.create_episode(full.model_copy(update={"steps": [], "state": full.initial_state}))
            state = full.initial_state
            for step in full.steps:
                state = full.state if step.index == 1 else state
                await store.append_step(full.id, step, state)
            await store.close_episode(full.id, status="submitted", final_answer=full.final_answer)

    asyncio.run(store_episode())
    model = scripted_model(passing_judge)
    args = ["judge", "ep-stored", "--db", str(db), "--source", source, "--no-bundled", "--judge-model", model]
    assert main([*args, "--save", "--votes", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["passed"] is True

    async def stored() -> tuple:
        async with Store(db) as store:
            return await store.load_judgment("ep-stored"), await store.load_episode("ep-stored")

    judgment, episode = asyncio.run(stored())
    assert judgment.passed is True and judgment.judge_model == model
    assert judgment.verdict["items"][2]["checks"][0]["votes"][0]["reason"] == "confirmed"
    assert episode.status == "judged"


def test_unusable_input_exits_2_with_a_message(tmp_path: Path, source: str, capsys) -> None:
    missing = tmp_path / "nope.json"
    assert main(["judge", str(missing), "--source", source, "--no-bundled"]) == 2
    assert "cannot read the trajectory" in capsys.readouterr().err
    broken = tmp_path / "broken.json"
    broken.write_text('{"id": "x"}', encoding="utf-8")
    assert main(["judge", str(broken), "--source", source, "--no-bundled"]) == 2
    assert "not an episode record: task_id: Field required" in capsys.readouterr().err
    assert main(["judge", "ep-absent", "--db", str(tmp_path / "empty.db"), "--no-bundled"]) == 2
    assert "no episode 'ep-absent'" in capsys.readouterr().err


def test_agreement_with_expert_labels(tmp_path: Path, source: str, task_data, capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "240")
    task = task_data["tasks"][0] | {"scenario": "example-refill-desk"}
    lines = [
        # Judge and expert agree on everything.
        {
            "task": task,
            "trajectory": record("ep-a").model_dump(mode="json"),
            "labels": {"refill-counted": True, "answer": True},
        },
        # Nothing was dispensed; the scripted judge still passes the answer, the expert fails it.
        {
            "task_id": TASK_ID,
            "trajectory": record("ep-b", dispensed=False).model_dump(mode="json"),
            "labels": {"refill-counted": False, "answer#0": False},
            "passed": False,
        },
    ]
    labels = tmp_path / "labels.jsonl"
    labels.write_text("\n".join(json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    model = scripted_model(passing_judge)
    args = [
        "judge-agreement",
        str(labels),
        "--source",
        source,
        "--no-bundled",
        "--judge-model",
        model,
        "--json",
    ]
    assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    groups = report["groups"]
    assert groups["deterministic items"]["agreement"] == 1.0 and groups["deterministic items"]["kappa"] == 1.0
    assert groups["llm items"]["labels"] == 1 and groups["llm items"]["agreement"] == 1.0
    assert groups["checks"] == {
        "labels": 1,
        "agreement": 0.0,
        "kappa": 0.0,  # p_o = 0 and p_e = 1 * 0 + 0 * 1 = 0
        "both_pass": 0,
        "both_fail": 0,
        "judge_only_pass": 1,
        "expert_only_pass": 0,
    }
    assert groups["tasks"]["agreement"] == 1.0
    assert [(d["episode_id"], d["label"]) for d in report["disagreements"]] == [("ep-b", "answer#0")]
    assert report["disagreements"][0]["reason"] == "confirmed" and report["disagreements"][0]["line"] == 2

    assert main(args[:-1]) == 0
    table = capsys.readouterr().out
    assert "llm items" in table and "1 disagreements" in table


def test_labels_naming_unknown_items_are_refused(tmp_path: Path, source: str, capsys) -> None:
    labels = tmp_path / "labels.jsonl"
    entry = {
        "task_id": TASK_ID,
        "trajectory": record().model_dump(mode="json"),
        "labels": {"refill-count": True},
    }
    labels.write_text(json.dumps(entry) + "\n" + '{"labels": {}}\n', encoding="utf-8")
    assert main(["judge-agreement", str(labels), "--source", source, "--no-bundled"]) == 2
    err = capsys.readouterr().err
    assert f"{labels}:2: trajectory: Field required" in err

    labels.write_text(json.dumps(entry) + "\n", encoding="utf-8")
    model = scripted_model(passing_judge)
    assert (
        main(["judge-agreement", str(labels), "--source", source, "--no-bundled", "--judge-model", model])
        == 2
    )
    assert f"label 'refill-count' names no item or check of task {TASK_ID!r}" in capsys.readouterr().err


def test_judge_sampling_options_and_an_unjudged_episode(tmp_path: Path, source: str, capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "240")
    trajectory = tmp_path / "ep-1.json"
    trajectory.write_text(record().model_dump_json(), encoding="utf-8")
    requests: list[dict] = []

    def unreadable(messages: list[dict], request: dict) -> str:
        requests.append(request)
        return "Probably fine."

    model = scripted_model(unreadable)
    options = ["--judge-reasks", "1", "--judge-temperature", "0.5", "--judge-max-tokens", "4000"]
    code = main(["judge", str(trajectory), "--source", source, "--no-bundled", "--judge-model", model, *options])
    out = capsys.readouterr().out
    assert code == 0 and "UNJUDGED (could not decide answer#0)" in out and "3 re-asks" in out
    assert len(requests) == 6 and {(r["temperature"], r["max_tokens"]) for r in requests} == {(0.5, 4000)}
    assert len({r["seed"] for r in requests}) == 6

    assert main(["judge", str(trajectory), "--source", source, "--no-bundled", "--judge-reasks", "99"]) == 2
    assert "invalid judge settings: reasks: Input should be less than or equal to 10" in capsys.readouterr().err
