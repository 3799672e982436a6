"""occusim tasks as a verifiers taskset, driven by verifiers' own `vf-eval` in its own virtualenv.

`make rl-interop` installs verifiers 0.4 with `integrations/verifiers` (pinned in requirements/verifiers.txt) and
runs this file; `make test` does not collect it. vf-eval plays groups of rollouts against a fake
OpenAI-compatible policy that streams its answers (verifiers' harness asks `stream: true`); each rollout is an
occusim episode, and its rewards must be what `occusim judge` gives for the same stored trajectory.
"""

from __future__ import annotations

import copy
import itertools
import json
import os
import re
import stat
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers import (
    API_KEYS,
    CHEST_PAIN,
    STUB_KEY,
    TOKEN_SECRET,
    TRIAGE,
    ProviderStub,
    Reply,
    chat_reply,
    free_port,
    judge_by_cli,
    server_env,
    start_service,
    wait_healthy,
)

SORE_THROAT = "triage-desk/sore-throat"
TASKS = [CHEST_PAIN, SORE_THROAT]
GROUP = 4
VF_TIMEOUT = 900
# What uv needs from this machine to fetch the harness's packages (certificates, proxies, an index).
NETWORK_ENV = (
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "UV_INDEX_URL",
    "UV_DEFAULT_INDEX",
    "UV_NATIVE_TLS",
)
# uv's cache outlives each test's HOME, so the harness's packages are fetched once.
UV_CACHE = Path(__file__).resolve().parents[2] / ".cache" / "rl-interop" / "uv-cache"


def triage_source(folder: Path) -> Path:
    """The triage scenario with two tasks whose rubrics are state checks (no judge model call)."""
    scenario = copy.deepcopy(TRIAGE)
    chest_pain = next(task for task in scenario["tasks"] if task["id"] == CHEST_PAIN)
    sore_throat = {
        **copy.deepcopy(chest_pain),
        "id": SORE_THROAT,
        "title": "Settle the sore throat",
        "instruction": "Give the patient with a sore throat priority 4.",
        "rubric": {
            "items": [
                {
                    "id": "p3",
                    "kind": "state",
                    "description": "P3 is priority 4",
                    "checks": [{"pointer": "/patients/2/priority", "op": "eq", "value": 4}],
                }
            ]
        },
        "reference_solution": [
            {"tool": "list_patients", "observation": {"patients": []}},
            {
                "tool": "set_priority",
                "arguments": {"patient_id": "P3", "priority": 4},
                "observation": {"ok": True, "patient_id": "P3", "priority": 4},
            },
        ],
    }
    scenario["tasks"] = [chest_pain, sore_throat]
    path = folder / "triage-desk.yaml"
    path.write_text(yaml.safe_dump(scenario, sort_keys=False))
    return path


class TriagePolicy:
    """A policy behind an OpenAI-compatible endpoint: it lists the patients, sets the priority the task asks
    for on the patient it names, and submits. Every second conversation is careless: it first sends a priority
    off the tool's schema (refused as invalid), then sets a wrong one, so a group holds passes and failures."""

    def __init__(self) -> None:
        self.conversations = itertools.count()
        self.lock = threading.Lock()

    def __call__(self, number: int, body: dict[str, Any], key: str) -> Reply:
        assert key == STUB_KEY, "the policy's key reaches the endpoint"
        messages = body["messages"]
        tools = {tool["function"]["name"] for tool in body.get("tools") or []}
        assistant = [m for m in messages if m["role"] == "assistant"]
        if not assistant:
            with self.lock:
                careless = next(self.conversations) % 2 == 1
            return self.call(f"call-{'careless' if careless else 'careful'}-0", "list_patients", {}, tools)
        careless = assistant[0]["tool_calls"][0]["id"].startswith("call-careless")
        tag, turn = ("careless" if careless else "careful"), len(assistant)
        task = next(_text(m) for m in messages if m["role"] == "user")
        wanted = int(re.search(r"priority (\d)", task).group(1))
        listed = json.loads(_text(next(m for m in messages if m["role"] == "tool")))
        patient = next(p["id"] for p in listed["patients"] if p["notes"] in task)
        plan = (
            [
                ("set_priority", {"patient_id": patient, "priority": 9}),
                ("set_priority", {"patient_id": patient, "priority": wanted % 5 + 1}),
            ]
            if careless
            else [("set_priority", {"patient_id": patient, "priority": wanted})]
        )
        plan.append(("submit_result", {"answer": f"{patient} set"}))
        if turn > len(plan):
            return Reply(chat_reply("Nothing left to do."))
        tool, arguments = plan[turn - 1]
        return self.call(f"call-{tag}-{turn}", tool, arguments, tools)

    @staticmethod
    def call(call_id: str, tool: str, arguments: dict[str, Any], tools: set[str]) -> Reply:
        assert tool in tools, f"{tool} is not among the forwarded tools {sorted(tools)}"
        return Reply(
            chat_reply(
                None,
                [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": tool, "arguments": json.dumps(arguments)},
                    }
                ],
            )
        )


def _text(message: dict[str, Any]) -> str:
    content = message.get("content") or ""
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content)
    return str(content)


def vf_eval(
    venv: Path, out: Path, policy_url: str, *options: str, env: dict[str, str]
) -> list[dict[str, Any]]:
    """`vf-eval occusim-verifiers` in verifiers' virtualenv, on both tasks, GROUP rollouts each: the rollouts' traces."""
    command = [
        str(venv / "bin" / "vf-eval"),
        "occusim-verifiers",
        "-n",
        str(len(TASKS)),
        "-r",
        str(GROUP),
        "-m",
        "triage-policy",
        "--client.base-url",
        policy_url,
        "--client.api-key-var",
        "POLICY_KEY",
        "--env.agent.harness.id",
        "null",
        # On this machine: verifiers' default runtime is a remote sandbox.
        "--env.agent.runtime.type",
        "subprocess",
        "--no-push",
        "-o",
        str(out),
        *options,
    ]
    # verifiers' virtualenv alone (its bin first, for uv): nothing of occusim's environment leaks into it.
    base = {
        "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(out.parent),
        "LANG": "C.UTF-8",
        "POLICY_KEY": STUB_KEY,
        "UV_CACHE_DIR": str(UV_CACHE),
        **{name: os.environ[name] for name in NETWORK_ENV if name in os.environ},
    }
    done = subprocess.run(
        command, capture_output=True, text=True, env={**base, **env}, cwd=out.parent, timeout=VF_TIMEOUT
    )
    assert done.returncode == 0, f"vf-eval failed:\n{done.stdout[-5000:]}\n{done.stderr[-5000:]}"
    [written] = out.rglob("traces.jsonl")
    # One line per episode, holding the trace of each agent that played in it (here: one).
    episodes = [json.loads(line) for line in written.read_text().splitlines() if line.strip()]
    return [trace for episode in episodes for trace in episode["traces"]]


def by_task(traces: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for trace in traces:
        groups.setdefault(trace["task"]["data"]["task_id"], []).append(trace)
    return groups


async def test_vf_eval_rewards_groups_with_the_verdicts_of_a_hosted_service(tmp_path, rl_interop_venv):
    venv = rl_interop_venv("verifiers")
    source, db = triage_source(tmp_path), tmp_path / "hosted.db"
    config = tmp_path / "service.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "db": str(db),
                "api_keys": API_KEYS,
                "token_secret": TOKEN_SECRET,
                "world_model": "scripted/triage",
                # Both rubrics are state checks: the judge reads the final state and calls no model.
                "judge_model": "scripted/triage",
                "expire_every_seconds": 3600,
            }
        )
    )
    port = free_port()
    service = start_service(tmp_path, config, source, port, tmp_path / "service.log")
    policy = TriagePolicy()
    try:
        await wait_healthy([f"http://127.0.0.1:{port}"], [service])
        with ProviderStub(policy).running() as stub:
            traces = vf_eval(
                venv,
                tmp_path / "out",
                stub.url,
                "--env.taskset.url",
                f"http://127.0.0.1:{port}",
                env={"OCCUSIM_API_KEY": API_KEYS["alice"]},
            )
            streamed = [request.get("stream") for request in stub.requests]
    finally:
        service.terminate()
        service.wait(timeout=60)

    assert streamed and set(streamed) == {True}, "verifiers' harness streams every model call"
    groups = by_task(traces)
    assert sorted(groups) == TASKS and all(len(group) == GROUP for group in groups.values())
    outcomes = set()
    for trace in traces:
        assert trace["stop_condition"] == "submitted" and not trace["errors"], trace["errors"]
        episode_id = trace["info"]["occusim"]["episode_id"]
        verdict = judge_by_cli(episode_id, db, source, "--no-bundled", env=server_env(tmp_path))
        rewards = trace["rewards"]
        assert rewards["judge_score"] == {"score": verdict["score"], "weight": 1.0}
        assert rewards["judge_passed"] == {"score": 1.0 if verdict["passed"] else 0.0, "weight": 0.0}
        careless = trace["info"]["occusim"]["invalid_calls"] == 1
        assert rewards["invalid_calls"]["score"] == (-1.0 if careless else 0.0)
        assert verdict["passed"] is not careless, "the careless policy fails, the careful one passes"
        outcomes.add(verdict["passed"])
    assert outcomes == {True, False}, "each group holds passes and failures"


def occusim_launcher(tmp_path: Path) -> Path:
    """An `occusim` executable as a user has one: this checkout's, with the scripted triage world registered."""
    env = server_env(tmp_path)
    launcher = tmp_path / "occusim"
    launcher.write_text(
        "#!/bin/sh\n"
        f"export PYTHONPATH='{env['PYTHONPATH']}' OCCUSIM_SCRIPTED_MODELS='{env['OCCUSIM_SCRIPTED_MODELS']}' "
        f"LITELLM_LOCAL_MODEL_COST_MAP=True XDG_DATA_HOME='{tmp_path / 'data'}'\n"
        f"exec '{sys.executable}' -m occusim \"$@\"\n"
    )
    launcher.chmod(launcher.stat().st_mode | stat.S_IXUSR)
    return launcher


@pytest.mark.parametrize("judged", [True, False], ids=["judged", "without-judge"])
def test_the_taskset_starts_its_own_service_and_reports_unjudged_episodes(tmp_path, rl_interop_venv, judged):
    venv = rl_interop_venv("verifiers")
    source, db = triage_source(tmp_path), tmp_path / "local.db"
    serve_args = [
        "--source",
        str(source),
        "--no-bundled",
        "--db",
        str(db),
        "--world-model",
        "scripted/triage",
        *(["--judge-model", "scripted/triage"] if judged else []),
    ]
    with ProviderStub(TriagePolicy()).running() as stub:
        traces = vf_eval(
            venv,
            tmp_path / "out",
            stub.url,
            "--env.taskset.occusim",
            str(occusim_launcher(tmp_path)),
            "--env.taskset.serve-args",
            json.dumps(serve_args),
            "--env.taskset.faults",
            '["E0"]',
            "--env.taskset.task.judge-timeout",
            "3",
            env={},
        )

    assert sorted(by_task(traces)) == TASKS and len(traces) == len(TASKS) * GROUP
    for trace in traces:
        episode_id = trace["info"]["occusim"]["episode_id"]
        if judged:
            verdict = judge_by_cli(episode_id, db, source, "--no-bundled", env=server_env(tmp_path))
            assert trace["rewards"]["judge_score"]["score"] == verdict["score"] and not trace["errors"]
        else:
            # Never a silent 0: the rollout carries the error naming the episode, and no reward.
            assert trace["rewards"]["judge_score"] is None
            [error] = trace["errors"]
            assert f"occusim episode {episode_id} has no verdict" in error["message"]
