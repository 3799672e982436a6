"""`occusim demo` with a scripted world model and judge: the live trajectory and the verdict it prints."""

from __future__ import annotations

import pytest

from occusim.clients.cli import main
from occusim.environments import load_catalog
from tests.helpers import TASK_A, ReplayWorld, passing_judge


@pytest.fixture(autouse=True)
def wide_console(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "240")
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
