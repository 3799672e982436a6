"""`--protocol occubench` beyond the request streams: serving over stdio, turn limits, refusals, a missing harness."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from recording_openai import VERIFIER, WORLD, recording_endpoint
from test_occubench_equivalence import OBSERVATION_PATTERN, SAMPLE

from occusim.clients import connect, stdio_command
from occusim.occubench import load_harness
from occusim.server import Store

pytestmark = pytest.mark.occubench_harness
TASK = "occubench/11"
KEY = "serve-test"


def _env(url: str) -> dict[str, str]:
    env = {"LITELLM_LOCAL_MODEL_COST_MAP": "True", "OCCUSIM_NO_CACHE": "1"}
    for role in ("WORLD_MODEL", "JUDGE"):
        env[f"OCCUSIM_{role}_API_BASE"] = url
        env[f"OCCUSIM_{role}_API_KEY"] = KEY
    return env


def config_instruction() -> str:
    tasks = [json.loads(line) for line in (SAMPLE / "eval_benchmark_solvable.jsonl").read_text().splitlines()]
    return next(t["agent_instruction"] for t in tasks if str(t["task_id"]) == TASK.split("/")[1])


def _config() -> dict:
    tasks = [json.loads(line) for line in (SAMPLE / "eval_benchmark_solvable.jsonl").read_text().splitlines()]
    env_name = next(t["env_name"] for t in tasks if str(t["task_id"]) == TASK.split("/")[1])
    return json.loads((SAMPLE / "world_model_configs" / f"{env_name}.json").read_text(encoding="utf-8"))


async def test_serve_applies_world_model_faults_and_verifier_and_keeps_submit(tmp_path: Path) -> None:
    db = tmp_path / "episodes.db"
    config = _config()
    first, second = (tool["name"] for tool in config["action_set_definitions"][:2])
    command = [sys.executable, "-m", "occusim", "serve", TASK, "--protocol", "occubench", "--source",
               f"occubench:{SAMPLE}", "--world-model", f"openai/{WORLD}", "--judge-model", f"openai/{VERIFIER}",
               "--faults", "E2", "--db", str(db), "--episode-id", "ep1", "--log-level", "warning"]
    with recording_endpoint(OBSERVATION_PATTERN) as endpoint:
        async with connect(stdio_command(command, env=_env(endpoint.url))) as client:
            task = await client.get_prompt("task")
            # OccuBench's task message (checked against the reference harness in the equivalence test).
            expected = load_harness(f"occubench:{SAMPLE}").agent_user_prompt(config_instruction())
            assert task.messages[0].content.text == expected
            listed = await client.list_tools()
            names = [tool.name for tool in listed.tools]
            assert "submit_result" in names and first in names
            assert all(tool.output_schema is None for tool in listed.tools)
            raw = '{"property_id":"Zürich-7"}'
            with_raw = await client.call_tool(first, json.loads(raw), meta={"occusim/raw_arguments": raw})
            without_raw = await client.call_tool(second, {"property_id": "OAK-88"})
            submitted = await client.call_tool("submit_result", {"answer": "NOI is $250,000: Fail."})
        world = endpoint.of(KEY, WORLD)
        verifier = endpoint.of(KEY, VERIFIER)

    assert not with_raw.is_error and not without_raw.is_error and not submitted.is_error
    # The result is the world model's text between its tags, verbatim (no re-serialisation).
    shown = with_raw.content[0].text
    assert json.loads(shown)["status"] == "ok" and shown.startswith('{"status": "ok"')
    # Every request starts from the environment's own prompt, with E2's fault rules after it.
    systems = {request["messages"][0]["content"] for request in world}
    assert len(systems) == 1
    system = systems.pop()
    assert system.startswith(config["world_model_system_prompt"])
    assert "{fault_count}" not in system and len(system) > len(config["world_model_system_prompt"]) + 200
    assert all("temperature" not in r and "seed" not in r and "response_format" not in r for r in world + verifier)
    # The first ask of the first call was unusable and asked again unchanged.
    assert world[0] == world[1]
    last = world[-1]["messages"]
    actions = [m["content"] for m in last if m["role"] == "user"]
    assert json.dumps({"name": first, "arguments": raw}, ensure_ascii=False) in actions[0]
    assert json.dumps({"name": second, "arguments": json.dumps({"property_id": "OAK-88"})}) in actions[1]
    assert last[2]["role"] == "assistant" and shown in last[2]["content"]
    # Three verifier votes of one user message; its trajectory ends with the submitted answer.
    assert len(verifier) == 3 and all(len(r["messages"]) == 1 for r in verifier)
    prompt = verifier[0]["messages"][0]["content"]
    assert raw in prompt and shown in prompt and "NOI is $250,000: Fail." in prompt
    assert str(config["state_description"]) in prompt

    async with Store(db) as store:
        record = await store.load_episode("ep1")
        judgment = await store.load_judgment("ep1")
    assert record.mode == "occubench" and record.status == "judged"
    assert [step.raw_arguments for step in record.steps] == [raw, None]
    assert judgment is not None
    assert judgment.verdict["passed"] is True and judgment.verdict["abstentions"] == 1


def test_protocol_occubench_without_the_harness_says_what_is_missing(tmp_path: Path) -> None:
    release = tmp_path / "release"
    release.mkdir()
    for name in ("eval_benchmark_solvable.jsonl", "task_scenario_all_pool.jsonl"):
        (release / name).write_bytes((SAMPLE / name).read_bytes())
    (release / "world_model_configs").symlink_to(SAMPLE / "world_model_configs")
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    ran = subprocess.run(
        [sys.executable, "-m", "occusim", "run", "--protocol", "occubench", "--source", f"occubench:{release}",
         "--tasks", TASK, "--out", str(tmp_path / "out"), "--agent-model", "openai/x", "--world-model",
         "openai/x", "--judge-model", "openai/x", "--no-progress"],
        env=env, capture_output=True, text=True, timeout=120,
    )
    assert ran.returncode == 2
    lines = ran.stderr.strip().splitlines()
    assert len(lines) == 1 and "no OccuBench harness package" in lines[0] and str(release / "occubench") in lines[0]


@pytest.mark.parametrize("remove", ["verifier.py", "lwm.py"])
def test_a_harness_missing_a_file_is_refused(tmp_path: Path, remove: str) -> None:
    from occusim.occubench import HarnessError

    harness = tmp_path / "occubench"
    harness.mkdir()
    for path in (SAMPLE / "occubench").glob("*.py"):
        if path.name != remove:
            (harness / path.name).write_bytes(path.read_bytes())
    with pytest.raises(HarnessError, match="no OccuBench harness package"):
        load_harness(f"occubench:{tmp_path / 'data'}")


async def test_run_stops_at_the_turn_limit_and_submits_the_last_reply_unlabelled(tmp_path: Path, monkeypatch) -> None:
    from occusim.analysis import RunConfig
    from occusim.clients import run_batch
    from occusim.llm import ModelConfig

    with recording_endpoint(OBSERVATION_PATTERN) as endpoint:
        for role in ("AGENT", "WORLD_MODEL", "JUDGE"):
            monkeypatch.setenv(f"OCCUSIM_{role}_API_BASE", endpoint.url)
            monkeypatch.setenv(f"OCCUSIM_{role}_API_KEY", KEY)
        config = RunConfig(
            agent_model=ModelConfig.for_role("agent", model="openai/fake-agent").model,
            world_model="openai/fake-world", judge_model="openai/fake-verifier", tasks=TASK,
            sources=[f"occubench:{SAMPLE}"], protocol="occubench", agent_max_turns=1, cache=False,
        )
        summary = await run_batch(config, tmp_path / "run", show_progress=False)
        verifier = endpoint.of(KEY, VERIFIER)
    [row] = summary.rows
    assert row.status == "ok" and row.agent_ended == "max_steps"
    assert row.final_answer == "Looking at the records first."
    assert row.steps == 2 and row.faults_injected == []
    trajectory = verifier[0]["messages"][0]["content"]
    assert "Looking at the records first." in trajectory and "submitted by" not in trajectory
    assert json.loads((tmp_path / "run" / "run.json").read_text())["protocol"] == "occubench"


async def test_run_refuses_tasks_from_other_sources(tmp_path: Path) -> None:
    from occusim.analysis import RunConfig, RunError
    from occusim.clients import run_batch

    config = RunConfig(agent_model="openai/a", world_model="openai/w", judge_model="openai/j",
                       tasks=f"{TASK},discharge-compliance-officer/*", sources=[f"occubench:{SAMPLE}"], protocol="occubench")
    with pytest.raises(RunError, match="OccuBench tasks only"):
        await run_batch(config, tmp_path / "run", show_progress=False)
