"""`occusim demo` with a scripted world model and judge: the live trajectory and the verdict it prints."""

from __future__ import annotations

from pathlib import Path

import pytest

from occusim.analysis import RunDir, load_rows
from occusim.clients.cli import main
from occusim.environments import load_catalog
from tests.helpers import TASK_A, ReplayWorld, passing_judge


@pytest.fixture(autouse=True)
def wide_console(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("COLUMNS", "240")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    for name in ("OCCUSIM_MODEL", "OCCUSIM_AGENT_MODEL", "OCCUSIM_WORLD_MODEL_MODEL", "OCCUSIM_JUDGE_MODEL"):
        monkeypatch.delenv(name, raising=False)


def test_demo_prints_calls_faults_state_changes_and_the_verdict(capsys: pytest.CaptureFixture[str]):
    task = load_catalog([]).task(TASK_A)
    world = ReplayWorld()

    status = main(["demo", TASK_A, "--world-model", world.model, "--judge-model", passing_judge(),
                   "--faults", "E2", "--seed", "3"])

    out = capsys.readouterr().out
    assert status == 0, out
    assert "reference-replay" in out and f"world model {world.model}" in out
    calls = [line.split(": ", 1)[1].split(" ")[0] for line in out.splitlines() if line.startswith("call ")]
    assert calls == [step.tool for step in task.reference_solution]  # E2 faults are never retried
    assert "fault (implicit " in out and "shown to the agent" in out and "true answer:" in out
    patch_ops = sum(len(step.state_patch) for step in task.reference_solution)
    assert out.count("  state ") == patch_ops
    assert f"final answer (submitted) {task.final_answer[:40]}" in out
    assert "verdict: score 1.00, passed" in out
    assert out.count("deterministic") == sum(1 for item in task.rubric.items if item.kind != "llm")
    for item in task.rubric.items:
        assert item.id in out


def test_demo_uses_the_env_var_for_a_role_and_refuses_unknown_tasks(monkeypatch: pytest.MonkeyPatch,
                                                                    capsys: pytest.CaptureFixture[str]):
    monkeypatch.setenv("OCCUSIM_WORLD_MODEL_MODEL", ReplayWorld().model)
    judge = passing_judge()

    assert main(["demo", TASK_A, "--judge-model", judge, "--faults", "E0"]) == 0
    out = capsys.readouterr().out
    assert "world model scripted/" in out and "fault (" not in out and "verdict: score 1.00, passed" in out

    assert main(["demo", "no-such/task"]) == 2
    assert "no-such/task" in capsys.readouterr().err


def test_the_demo_keeps_a_run_folder_that_view_and_report_open(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    status = main(["demo", TASK_A, "--world-model", ReplayWorld().model, "--judge-model", passing_judge(),
                   "--faults", "E2"])

    out = capsys.readouterr().out
    assert status == 0, out
    (folder,) = (tmp_path / "data" / "occusim" / "demo").iterdir()
    assert f"kept in {folder}" in out
    assert f"occusim view {folder}" in out
    report = folder / "report.html"
    assert f"occusim report {folder} --format html --out {report}" in out
    config, (row,) = load_rows(folder)
    assert row.task_id == TASK_A and row.passed is True and row.episode_id and row.messages
    # The faults' places are drawn over the task's expected length: a short episode may end before the second.
    assert row.faults_planned == 2 and 1 <= row.faults_met <= 2 and config.agent_model == "reference-replay"
    assert row.too_short_for_faults == (row.faults_met < row.faults_planned)
    assert (folder / "episodes.db").is_file() and RunDir(folder).default_db.endswith("episodes.db")

    # The printed commands work on what the demo left.
    assert main(["report", str(folder), "--format", "html", "--out", str(report)]) == 0
    assert TASK_A in report.read_text() or "completion" in report.read_text().lower()

