"""`occusim run` end to end with scripted agent, world and judge models: metrics, report, export, resume,
infrastructure errors, and the stdio and HTTP transports."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from pathlib import Path

import litellm
import pytest
from datasets import load_dataset

from occusim.analysis import RunDir, compute_metrics, load_rows
from occusim.clients._episode_runner import is_simulator_error, is_world_model_outage
from occusim.clients.cli import main
from occusim.environments import FaultSettings, StepRecord, load_catalog
from occusim.llm import scripted_model
from occusim.server import FaultSchedule, Store
from tests.helpers import (
    TASK_A,
    TASK_B,
    ReplayWorld,
    ScriptedAgent,
    passing_judge,
    synthetic_rows,
    write_run,
)


def policy(task_id: str, seed: int | None) -> str:
    """Task A's agent gives up on any unexpected result; task B's ignores them but quits on odd seeds."""
    if task_id == TASK_A:
        return "careful"
    return "replay" if (seed or 0) % 2 == 0 else "quit"


def run_cli(out: Path, *, agent: str, world: str, judge: str, tasks: str = f"{TASK_A},{TASK_B}",
            faults: str = "E0,E2", trials: int = 2, extra: tuple[str, ...] = ()) -> int:
    return main([
        "run", "--agent-model", agent, "--world-model", world, "--judge-model", judge, "--tasks", tasks,
        "--faults", faults, "--fault-count", "2", "--fault-duration", "2", "--trials", str(trials),
        "--concurrency", "4", "--out", str(out), "--no-progress", *extra,
    ])


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two tasks x E0, E2 x two trials, run once for the tests of this module."""
    out = tmp_path_factory.mktemp("run") / "out"
    status = run_cli(out, agent=ScriptedAgent(policy, name="e2e-agent").model,
                     world=ReplayWorld(name="e2e-world").model, judge=passing_judge("e2e-judge"))
    assert status == 0
    return out


def test_every_combination_has_one_scored_row(finished_run: Path):
    config, rows = load_rows(finished_run)

    assert config.faults == ["E0", "E2"] and config.trials == 2
    assert sorted(row.key for row in rows) == sorted(
        (task, mode, trial) for task in (TASK_A, TASK_B) for mode in ("E0", "E2") for trial in (0, 1)
    )
    assert all(row.status == "ok" and row.verdict is not None and row.episode_id for row in rows)
    assert (finished_run / "episodes.db").is_file()
    clean = [row for row in rows if row.fault_mode == "E0"]
    assert all(row.faults_injected == [] for row in clean)
    # Task A's careful agent met a degraded result at call 1 in every E2 episode.
    assert all(row.faults_injected for row in rows if row.fault_mode == "E2" and row.task_id == TASK_A)


def test_metrics_match_the_scripted_behaviour(finished_run: Path):
    metrics = compute_metrics(load_rows(finished_run)[1])

    # A passes both clean trials and no E2 trial; B passes seed 0 in both modes and quits on seed 1.
    assert (metrics.completion.passed, metrics.completion.total) == (4, 8)
    assert metrics.by_fault_mode["E0"].rate == 0.75
    assert metrics.by_fault_mode["E2"].rate == 0.25
    # B's seed-1 E2 trial quit before any call, so it met no fault and robustness leaves it out: E2 over
    # the paired tasks is (A 0 + B 1/1) / 2 against E0's (1 + 1/2) / 2.
    assert metrics.robustness.value == pytest.approx(0.5 / 0.75) and metrics.robustness.unfaulted_left_out == 1
    assert {name: rate.rate for name, rate in metrics.by_category.items()} == {
        "Public Service & Governance": 0.5, "Commerce & Consumer": 0.5,
    }
    assert metrics.by_difficulty[1].total == 8
    assert metrics.pass_at_k == {1: 0.5, 2: 0.75}
    assert metrics.pass_hat_k == {1: 0.5, 2: 0.25}
    assert metrics.infra_errors == 0 and metrics.simulator_error_rate == 0.0
    usage = metrics.usage_by_role
    assert usage["agent"].calls > 0 and usage["world_model"].calls == metrics.steps
    # Every scored episode was judged with 3 votes (one call per vote).
    assert usage["judge"].calls == 8 * 3


def test_rows_carry_what_the_agent_saw(finished_run: Path):
    rows = {row.key: row for row in load_rows(finished_run)[1]}
    row = rows[(TASK_B, "E0", 0)]

    roles = [message["role"] for message in row.messages]
    assert roles[:2] == ["system", "user"] and roles[-2:] == ["assistant", "tool"]
    assert "Chargeback Analyst" in row.messages[0]["content"]
    assert row.messages[-2]["tool_calls"][0]["function"]["name"] == "submit_result"
    assert row.agent_ended == "submitted" and row.passed is True and row.score == 1.0
    assert {tool["function"]["name"] for tool in row.tools} >= {"submit_result"}
    # The agent is told the same in every fault mode.
    assert row.messages[0] == rows[(TASK_B, "E2", 0)].messages[0]
    assert set(row.usage) == {"agent", "world_model", "judge"}


def test_report_markdown_and_html(finished_run: Path, tmp_path: Path):
    assert main(["report", str(finished_run), "--out", str(tmp_path / "report.md")]) == 0
    markdown = (tmp_path / "report.md").read_text()
    assert "| E0 | 3/4 | 75.0% | [" in markdown
    assert "| E2 | 1/4 | 25.0% | [" in markdown
    assert "**Robustness:** 0.667 (partial)" in markdown and "over 2 task(s) scored in every mode" in markdown
    assert re.search(r"\| 2 \| 0\.750 \| [^|]+ \| 0\.250 \|", markdown)
    for image in ("report_completion_by_category.png", "report_degradation.png"):
        assert f"]({image})" in markdown
        assert (tmp_path / image).read_bytes().startswith(b"\x89PNG")

    assert main(["report", str(finished_run), "--format", "html", "--out", str(tmp_path / "report.html")]) == 0
    page = (tmp_path / "report.html").read_text()
    assert page.count('src="data:image/png;base64,') == 2
    assert "http://" not in page and "https://" not in page
    assert "<td>E2</td><td>1/4</td><td>25.0%</td>" in page


@pytest.mark.parametrize("fmt", ["openai", "sharegpt"])
def test_export_loads_with_datasets(finished_run: Path, tmp_path: Path, fmt: str):
    out = tmp_path / f"{fmt}.jsonl"
    assert main(["export", str(finished_run), "--format", fmt, "--min-score", "1.0", "--out", str(out)]) == 0

    dataset = load_dataset("json", data_files=str(out), split="train", cache_dir=str(tmp_path / "hf"))
    assert dataset.num_rows == 4  # the passing episodes
    assert all(reward == 1.0 for reward in dataset["reward"])
    first = dataset[0]
    assert first["metadata"]["task_id"] in (TASK_A, TASK_B)
    assert {item["kind"] for item in first["verdict"]} >= {"state", "tool_call", "llm"}
    tools = json.loads(first["tools"])
    if fmt == "openai":
        assert first["messages"][0]["role"] == "system"
        assert first["messages"][-2]["tool_calls"][0]["function"]["name"] == "submit_result"
        assert tools[0]["type"] == "function"
    else:
        assert [turn["from"] for turn in first["conversations"]][:2] == ["human", "function_call"]
        assert first["conversations"][-1]["from"] == "observation"
        assert "name" in tools[0]


def test_a_second_run_skips_finished_combinations(finished_run: Path, capsys: pytest.CaptureFixture[str]):
    before = (finished_run / "results.jsonl").read_text()
    # Same model names as the first run, but any call now fails the test.
    agent = scripted_model(lambda messages, request: pytest.fail("no episode should run"), name="e2e-agent")

    status = run_cli(finished_run, agent=agent, world="scripted/e2e-world", judge="scripted/e2e-judge")

    assert status == 0
    assert (finished_run / "results.jsonl").read_text() == before
    assert "0 episode(s) run, 8 already done" in capsys.readouterr().out


def test_a_resumed_run_must_keep_its_settings(finished_run: Path, capsys: pytest.CaptureFixture[str]):
    status = run_cli(finished_run, agent="scripted/e2e-agent", world="scripted/e2e-world",
                     judge="scripted/e2e-judge", extra=("--fault-count", "3"))

    assert status == 2
    assert "fault_count: 2 -> 3" in capsys.readouterr().err


def outage_for(scenario_name: str, world: ReplayWorld) -> Callable[[list[dict], dict], object]:
    """A world model whose provider is down for one scenario (each call raises a 503)."""

    def respond(messages: list[dict], request: dict) -> object:
        if scenario_name in messages[0]["content"]:
            raise litellm.ServiceUnavailableError("upstream unavailable", llm_provider="openai", model="w")
        return world(messages, request)

    return respond


def test_world_model_outage_is_an_infra_error_not_a_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("OCCUSIM_LLM_RETRIES", "1")
    world = ReplayWorld()
    out = tmp_path / "out"
    agent, judge = ScriptedAgent(policy, name="outage-agent").model, passing_judge("outage-judge")

    status = run_cli(out, agent=agent, world=scripted_model(outage_for("Chargeback", world), name="outage-world"),
                     judge=judge, faults="E0", trials=1, extra=("--infra-retries", "1"))

    assert status == 0
    rows = {row.task_id: row for row in load_rows(out)[1]}
    assert rows[TASK_A].status == "ok" and rows[TASK_A].passed is True
    failed = rows[TASK_B]
    assert failed.status == "infra_error" and failed.attempts == 2 and failed.passed is None
    assert "world model outage" in failed.error and "ServiceUnavailableError" in failed.error
    metrics = compute_metrics(rows.values())
    assert (metrics.completion.passed, metrics.completion.total) == (1, 1)
    assert metrics.infra_errors == 1 and metrics.scored == 1
    # The agent's calls in both failed attempts are still counted (and paid for).
    assert failed.usage["agent"].calls >= 2 and metrics.usage_by_role["agent"].calls > failed.usage["agent"].calls

    # Resuming with the provider back retries only the infra error, and it now counts.
    scripted_model(world, name="outage-world")
    status = run_cli(out, agent=agent, world="scripted/outage-world", judge=judge, faults="E0", trials=1,
                     extra=("--infra-retries", "1"))
    assert status == 0
    rows = {row.task_id: row for row in load_rows(out)[1]}
    assert rows[TASK_B].status == "ok" and rows[TASK_B].passed is True
    assert len(RunDir(out).read_rows()) == 3


def failed_step(error_type: str, message: str) -> StepRecord:
    return StepRecord(index=1, tool="get_dispute", observation={"error": {"type": error_type, "message": message}},
                      is_error=True, error=message)


def test_an_outage_is_told_by_the_error_type_not_the_wording():
    outage = failed_step("simulator_unavailable", "provider down (ServiceUnavailableError); retry it later")
    # A model that gave no valid answer, even one quoting the outage wording, is not an outage.
    weak = failed_step("simulator_error", "no valid answer (the reply said 'the world model is unreachable')")
    domain = failed_step("NOT_FOUND", "the world model is unreachable")

    assert is_world_model_outage(outage) and is_simulator_error(outage)
    assert not is_world_model_outage(weak) and is_simulator_error(weak)
    assert not is_world_model_outage(domain) and not is_simulator_error(domain)


def test_judge_outage_is_an_infra_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("OCCUSIM_LLM_RETRIES", "1")

    def down(messages: list[dict], request: dict) -> object:
        raise litellm.InternalServerError("judge down", llm_provider="openai", model="j")

    out = tmp_path / "out"
    status = run_cli(out, agent=ScriptedAgent(policy).model, world=ReplayWorld().model,
                     judge=scripted_model(down), tasks=TASK_A, faults="E0", trials=1,
                     extra=("--infra-retries", "0"))

    assert status == 3  # nothing was measured
    (row,) = load_rows(out)[1]
    assert row.status == "infra_error" and "JudgeModelError" in row.error
    assert compute_metrics([row]).completion.total == 0


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_real_wire_transports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, transport: str):
    # `occusim serve` subprocesses register the same replay world model by importing that module.
    monkeypatch.setenv("OCCUSIM_SCRIPTED_MODELS", "tests.helpers.replay_worlds")
    world = ReplayWorld(name="replay-world")
    out = tmp_path / "out"

    status = run_cli(out, agent=ScriptedAgent(policy).model, world=world.model, judge=passing_judge(),
                     tasks=TASK_B, faults="E2", trials=1, extra=("--transport", transport, "--fault-window", "14"))

    assert status == 0
    (row,) = load_rows(out)[1]
    assert row.status == "ok" and row.transport == transport
    assert row.passed is True and row.faults_injected and row.steps == len(row.messages[2:-2]) // 2

    # The server placed the faults over the window the run asked for, not over the task's own.
    async def recorded() -> list[StepRecord]:
        async with Store(RunDir(out).default_db) as store:
            return (await store.load_episode(row.episode_id or "")).steps

    steps = asyncio.run(recorded())
    task = load_catalog([]).task(TASK_B)
    wide = FaultSchedule.for_task(FaultSettings(mode="E2", seed=row.seed, window=14), task)
    own = FaultSchedule.for_task(FaultSettings(mode="E2", seed=row.seed), task)
    assert row.fault_window == wide.window == 14 != own.window
    # Every fault the server injected was due under the requested window's schedule.
    assert all(wide.next_fault(steps[:step.index]) is not None for step in steps if step.fault is not None)
    assert wide.tally(steps).met == row.faults_met


def test_an_episode_past_its_timeout_is_an_infra_error(tmp_path: Path):
    async def stuck(messages: list[dict], request: dict) -> object:
        await asyncio.sleep(30)
        return {}

    out = tmp_path / "out"
    status = run_cli(out, agent=ScriptedAgent(policy).model, world=scripted_model(stuck), judge=passing_judge(),
                     tasks=TASK_A, faults="E0", trials=1, extra=("--episode-timeout", "0.5", "--infra-retries", "0"))

    assert status == 3  # a run of nothing but infrastructure errors measured nothing
    (row,) = load_rows(out)[1]
    assert row.status == "infra_error" and row.error.startswith("TimeoutError")


def test_a_torn_last_line_is_skipped_and_the_next_row_starts_a_fresh_line(tmp_path: Path):
    rows = synthetic_rows()[:3]
    folder = RunDir(tmp_path / "run")
    write_run(folder.path, rows[:2])
    with folder.results_path.open("a") as handle:
        handle.write(rows[2].model_dump_json()[:50])  # the process was killed mid-write

    assert [row.key for row in folder.read_rows()] == [row.key for row in rows[:2]]
    folder.append_row(rows[2])
    assert [row.key for row in folder.read_rows()] == [row.key for row in rows]


def test_a_faithful_world_model_runs_unflagged_and_the_report_says_so(finished_run: Path, tmp_path: Path):
    _, rows = load_rows(finished_run)
    assert {row.audited for row in rows} == {"state"}
    assert [row.flagged_steps for row in rows] == [[] for _ in rows]
    assert main(["report", str(finished_run), "--out", str(tmp_path / "report.md")]) == 0
    markdown = (tmp_path / "report.md").read_text()
    steps = sum(row.steps for row in rows)
    assert f"| world model: {rows[0].world_model} | {steps} | 0 | 0.0 | - |" in markdown
