"""`occusim run` against endpoints that are down or refuse the key: the run stops at the first configuration
error, names the URL or variable to check and exits non-zero; a run of nothing but infrastructure errors
exits non-zero too; a `--tasks` typo is refused with the nearest ids. Real loopback HTTP endpoints."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from occusim.analysis import load_rows
from occusim.clients._replay_agent import ReplayAgent
from occusim.clients.cli import main
from occusim.environments import load_catalog
from tests.helpers import TASK_A, TASK_B, ReplayWorld, Reply, passing_judge, provider_stub

NOT_MEASURED = 3


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def run(out: Path, *, agent: str, world: str, judge: str, tasks: str = f"{TASK_A},{TASK_B}",
        trials: int = 2) -> int:
    return main(["run", "--agent-model", agent, "--world-model", world, "--judge-model", judge, "--tasks", tasks,
                 "--faults", "E0", "--trials", str(trials), "--concurrency", "1", "--out", str(out),
                 "--no-progress"])


def test_an_agent_endpoint_that_refuses_connections_stops_the_run_naming_its_url(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    url = f"http://127.0.0.1:{closed_port()}/v1"
    monkeypatch.setenv("OCCUSIM_AGENT_API_BASE", url)
    out = tmp_path / "out"

    status = run(out, agent="openai/agent-under-test", world=ReplayWorld().model, judge=passing_judge())

    assert status == NOT_MEASURED
    err = capsys.readouterr().err
    assert "stopped at a configuration error" in err
    assert url in err and "OCCUSIM_AGENT_API_BASE" in err
    assert "3 combination(s) not started" in err
    # Stopped at the first: one row, one attempt, no retries.
    (row,) = load_rows(out)[1]
    assert row.status == "infra_error" and row.attempts == 1 and url in (row.configuration_error or "")


def test_a_world_model_endpoint_that_refuses_the_key_stops_the_run_naming_the_variable(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    monkeypatch.setenv("OCCUSIM_WORLD_MODEL_API_KEY", "sk-revoked-0123456789")
    with provider_stub(Reply({"error": {"message": "invalid api key"}}, status=401)) as stub:
        monkeypatch.setenv("OCCUSIM_WORLD_MODEL_API_BASE", stub.url)
        status = run(tmp_path / "out", agent="reference-replay", world="openai/world", judge=passing_judge())
        calls = len(stub.requests)

    assert status == NOT_MEASURED
    err = capsys.readouterr().err
    assert "world model 'openai/world'" in err and "refused the key" in err and "OCCUSIM_WORLD_MODEL_API_KEY" in err
    assert "sk-revoked-0123456789" not in err
    # Stopped at the first episode, not retried: one request per call the replaying agent made (it tries each
    # reference step again after an error, as it would after an outage).
    (row,) = load_rows(tmp_path / "out")[1]
    task = load_catalog().task(row.task_id)
    assert row.attempts == 1 and 0 < calls <= len(task.reference_solution) * (ReplayAgent(task).retries + 1)


def test_a_run_whose_every_episode_is_an_infrastructure_error_exits_non_zero(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):
    monkeypatch.setenv("OCCUSIM_LLM_RETRIES", "1")
    with provider_stub(Reply({"error": {"message": "overloaded"}}, status=503)) as stub:
        monkeypatch.setenv("OCCUSIM_JUDGE_API_BASE", stub.url)
        status = main(["run", "--agent-model", "reference-replay", "--world-model", ReplayWorld().model,
                       "--judge-model", "openai/judge", "--tasks", TASK_A, "--out", str(tmp_path / "out"),
                       "--infra-retries", "0", "--no-progress"])

    assert status == NOT_MEASURED
    captured = capsys.readouterr()
    assert "1 infrastructure error(s)" in captured.out
    assert "every episode of this run (1) was an infrastructure error" in captured.err
    assert "HTTP 503" in captured.err


@pytest.mark.parametrize(("selector", "typo", "nearest"), [
    (f"{TASK_A},emergency-dispatcher/chest-pain-delt", "emergency-dispatcher/chest-pain-delt", TASK_A),
    ("healthcare-life-science", "healthcare-life-science", "healthcare-life-sciences"),
    (f"{TASK_B},emergency-dispatchr/*", "emergency-dispatchr/*", None),
])
def test_a_task_selector_that_matches_nothing_is_refused_with_the_nearest_ids(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], selector: str, typo: str, nearest: str | None):
    status = main(["run", "--agent-model", "reference-replay", "--world-model", ReplayWorld().model,
                   "--judge-model", passing_judge(), "--tasks", selector, "--out", str(tmp_path / "out"),
                   "--dry-run"])

    assert status == 2
    err = capsys.readouterr().err
    assert f"--tasks: unknown task, scenario or category {typo!r}" in err
    if nearest is not None:
        assert f"Did you mean: {nearest}" in err
    else:
        assert "occusim list" in err or "Did you mean" in err
