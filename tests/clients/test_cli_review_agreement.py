"""`occusim judge-agreement --labels`: reviewers' files beside a run, compared with its recorded verdicts and
with each other; malformed files and labels naming nothing in the run exit 2 with the file and line."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from occusim.clients.cli import main
from occusim.judge import ReviewLabel, label_line
from occusim.testing import CLEAN, FAULTED, HOSTILE_ID, write_viewed_run

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
