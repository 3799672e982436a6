"""`occusim judge-agreement --labels`: reviewers' files beside a run, compared with its recorded verdicts and
with each other; malformed files and labels naming nothing in the run exit 2 with the file and line."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from occusim.analysis import ResultRow, RunConfig, RunDir
from occusim.clients.cli import main
from occusim.environments import apply_json_patch, load_catalog
from occusim.judge import ReviewLabel, label_line
from occusim.server import Store
from tests.helpers import CLEAN, FAULTED, HOSTILE_ID, calibrated_judge, write_viewed_run
from tests.helpers._catalog_labels import build_labels, read_answers

WHEN = datetime(2026, 12, 3, 8, 0, tzinfo=UTC)


def write_labels(path: Path, reviewer: str, *labels: tuple[str, str, bool, str]) -> Path:
    tasks = {CLEAN: "chargeback/dispute", FAULTED: "chargeback/dispute", HOSTILE_ID: "pharmacy/refill"}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(label_line(ReviewLabel(
        episode_id=episode, task_id=tasks.get(episode, "chargeback/dispute"),
        scenario_id=tasks.get(episode, "chargeback/").split("/")[0], item=item, passed=passed, note=note,
        reviewer=reviewer, labelled_at=WHEN)) for episode, item, passed, note in labels), encoding="utf-8")
    return path


@pytest.fixture
async def run(tmp_path: Path) -> Path:
    folder = (await write_viewed_run(tmp_path / "run")).folder
    write_labels(folder / "labels" / "alice.jsonl", "alice",
                 (CLEAN, "answer", True, ""), (CLEAN, "state-closed", True, ""),
                 (FAULTED, "answer", True, "the amount is in the first call"),  # the judge failed it
                 (HOSTILE_ID, "answer", False, ""))
    write_labels(folder / "labels" / "bob.jsonl", "bob",
                 (CLEAN, "answer", True, ""), (FAULTED, "answer", False, "never says $89.99"))
    return folder


def test_judge_and_reviewers_per_kind_scenario_reviewer_and_pair(run: Path, capsys):
    files = sorted(str(p) for p in (run / "labels").glob("*.jsonl"))
    assert main(["judge-agreement", "--labels", *files, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)

    assert report["run"] == str(run.resolve()) and report["labels"] == 6 and report["undecided"] == 0
    assert {kind: g["labels"] for kind, g in report["by_kind"].items()} == {"state": 1, "llm": 5}
    llm = report["by_kind"]["llm"]
    assert (llm["both_pass"], llm["both_fail"], llm["judge_only_pass"], llm["reviewer_only_pass"]) == (2, 2, 0, 1)
    assert llm["agreement"] == pytest.approx(0.8)
    assert {name: g["labels"] for name, g in report["by_scenario"].items()} == {"chargeback": 5, "pharmacy": 1}
    assert report["by_reviewer"]["alice"]["agreement"] == pytest.approx(0.75)
    assert report["by_reviewer"]["bob"]["agreement"] == 1.0
    [pair] = report["reviewer_pairs"]
    assert (pair["first"], pair["second"], pair["labels"], pair["agreement"]) == ("alice", "bob", 2, 0.5)
    assert (pair["both_pass"], pair["first_only_pass"], pair["second_only_pass"]) == (1, 1, 0)
    assert pair["disagreements"] == [{"episode_id": FAULTED, "item": "answer", "alice": True, "bob": False,
                                      "notes": ["the amount is in the first call", "never says $89.99"]}]
    [wrong] = report["disagreements"]
    assert (wrong["reviewer"], wrong["line"], wrong["judge"], wrong["reviewer_verdict"]) == ("alice", 3, False, True)


def test_the_table_names_every_group(run: Path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "240")
    assert main(["judge-agreement", "--labels", str(run / "labels" / "alice.jsonl"),
                 str(run / "labels" / "bob.jsonl")]) == 0
    out = capsys.readouterr().out
    for text in ("kind state", "kind llm", "scenario chargeback", "scenario pharmacy", "reviewer alice",
                 "alice / bob", "1 disagreements of the judge with a reviewer", "the amount is in the first call",
                 f"{run.resolve()}/labels/alice.jsonl:3"):
        assert text in out


def test_labels_outside_the_run_folder_need_run(run: Path, tmp_path: Path, capsys):
    elsewhere = write_labels(tmp_path / "carol.jsonl", "carol", (CLEAN, "answer", False, "too terse"))
    assert main(["judge-agreement", "--labels", str(elsewhere)]) == 2
    assert "name the run with --run RUN_DIR" in capsys.readouterr().err
    assert main(["judge-agreement", "--labels", str(elsewhere), "--run", str(run), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["by_reviewer"]["carol"]["judge_only_pass"] == 1
    assert main(["judge-agreement", "--labels", str(elsewhere), "--run", str(tmp_path)]) == 2
    assert "run.json not found" in capsys.readouterr().err


def test_bad_files_and_unknown_episodes_or_items_exit_2_naming_the_line(run: Path, tmp_path: Path, capsys):
    broken = tmp_path / "broken.jsonl"
    broken.write_text(label_line(ReviewLabel(episode_id=CLEAN, task_id="chargeback/dispute", scenario_id="c",
                                             item="answer", passed=True, reviewer="dan", labelled_at=WHEN))
                      + '{"episode_id": 3}\n', encoding="utf-8")
    assert main(["judge-agreement", "--labels", str(broken), "--run", str(run)]) == 2
    err = capsys.readouterr().err
    assert f"{broken}:2: episode_id: Input should be a valid string" in err and f"{broken}:1" not in err

    unknown = write_labels(tmp_path / "erin.jsonl", "erin", (CLEAN, "answer", True, ""), ("ep-gone", "answer", True, ""),
                           (CLEAN, "tone", False, ""))
    assert main(["judge-agreement", "--labels", str(unknown), "--run", str(run)]) == 2
    err = capsys.readouterr().err
    assert f"{unknown}:2: episode 'ep-gone' is not a judged episode of the run" in err
    assert f"{unknown}:3: item 'tone' is not in the rubric of 'chargeback/dispute' (its items: state-closed, answer)" in err

    assert main(["judge-agreement", "--labels", str(tmp_path / "none.jsonl"), "--run", str(run)]) == 2
    assert "no such labels file" in capsys.readouterr().err
    assert main(["judge-agreement"]) == 2
    assert "give LABELS.jsonl, or --labels" in capsys.readouterr().err
    assert main(["judge-agreement", str(broken), "--labels", str(broken)]) == 2
    assert "not both" in capsys.readouterr().err
    assert main(["judge-agreement", "--labels", str(broken), "--write-exemplars", str(tmp_path / "x")]) == 2
    assert "--write-exemplars takes a LABELS.jsonl" in capsys.readouterr().err and not (tmp_path / "x").exists()


def test_view_refuses_labelling_without_what_it_needs(run: Path, tmp_path: Path, capsys):
    assert main(["view", str(run), "--label", "--no-browser"]) == 2
    assert "--label needs --reviewer NAME" in capsys.readouterr().err
    assert main(["view", "--db", str(run / "episodes.db"), "--label", "--reviewer", "al", "--no-browser"]) == 2
    assert "--label needs a RUN_DIR" in capsys.readouterr().err
    assert main(["view", str(run), "--label", "--reviewer", "../x", "--no-browser"]) == 2
    assert "not a usable name" in capsys.readouterr().err
    assert main(["view", str(run), "--reviewer", "al", "--no-browser"]) == 2
    assert "--reviewer and --show-judge go with --label" in capsys.readouterr().err
    (run / "labels" / "zed.jsonl").write_text("{oops\n", encoding="utf-8")
    assert main(["view", str(run), "--label", "--reviewer", "zed", "--no-browser"]) == 2
    assert "zed.jsonl:1: not JSON" in capsys.readouterr().err


ANSWERS = Path(__file__).parent.parent / "fixtures" / "catalog_labels" / "answers.yaml"


async def catalog_run(folder: Path) -> Path:
    """A run of two catalog tasks (six episodes: the catalog author's passing, near-miss and failing answers
    after each reference solution) whose results recorded no verdict, labelled by one reviewer; its labels file."""
    catalog = load_catalog()
    labelled = build_labels(read_answers(ANSWERS)[:2], catalog)
    run_dir = RunDir(folder)
    run_dir.write_config(RunConfig(agent_model="reference-replay", world_model="reference", judge_model="none"))
    reviews = []
    async with Store(folder / "episodes.db") as store:
        for number, entry in enumerate(labelled):
            record = entry.trajectory
            await store.create_episode(record.model_copy(update={"steps": [], "state": record.initial_state,
                                                                 "status": "open", "final_answer": None}))
            state = record.initial_state
            for step in record.steps:
                state = apply_json_patch(state, step.state_patch)
                await store.append_step(record.id, step, state)
            await store.close_episode(record.id, status="submitted", final_answer=record.final_answer)
            task = catalog.task(record.task_id)
            run_dir.append_row(ResultRow(
                task_id=task.id, scenario_id=record.scenario_id, category="Business & Enterprise", difficulty=1,
                fault_mode="E0", fault_count=0, fault_duration=1, trial=number, seed=number,
                agent_model="reference-replay", world_model="reference", judge_model="none", transport="inprocess",
                status="unjudged", episode_id=record.id))
            [(item, passed)] = entry.labels.items()
            reviews.append((record.id, item, passed, entry.note or ""))
    labels = folder / "labels" / "alice.jsonl"
    labels.parent.mkdir()
    labels.write_text("".join(label_line(ReviewLabel(
        episode_id=episode, task_id=episode.rsplit("--", 1)[0].replace("--", "/"),
        scenario_id=episode.split("--")[0], item=item, passed=passed, note=note, reviewer="alice",
        labelled_at=WHEN)) for episode, item, passed, note in reviews), encoding="utf-8")
    return labels


def test_a_judge_model_judges_the_labelled_episodes_again(tmp_path: Path, capsys):
    labels = asyncio.run(catalog_run(tmp_path / "run"))
    # No verdict was recorded, so without a judge model nothing can be compared.
    assert main(["judge-agreement", "--labels", str(labels)]) == 2
    assert ":1: episode 'ap-invoice-clerk--bank-change-fraud--pass' is not a judged episode" in capsys.readouterr().err

    assert main(["judge-agreement", "--labels", str(labels), "--judge-model", calibrated_judge(), "--votes", "1",
                 "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["judge"].startswith("scripted/") and report["labels"] == 6
    assert list(report["by_kind"]) == ["llm"] and report["by_kind"]["llm"]["labels"] == 6
    # The exemplar-copying judge agrees with the author's labels but on the failing answer it finds like a pass.
    assert [(d["episode_id"], d["judge"], d["reviewer_verdict"]) for d in report["disagreements"]] == [
        ("ap-invoice-clerk--bank-change-fraud--fail", True, False)]
