"""`occusim run --protocol occubench` sends what OccuBench's own harness sends, request by request.

Both run the same tasks in E0-E3 against one recording OpenAI-compatible endpoint; for each role (agent,
world model, verifier) the two request streams must hold the same requests: messages, tools, model and
every sampling parameter. Requests are compared as multisets because episodes (and the verifier's
votes) run concurrently on both sides; each request carries its whole conversation, so the multiset
fixes the order within an episode. OccuBench's faults are prompt text only (no random fault steps),
so E1-E3 are compared exactly too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from recording_openai import (
    AGENT,
    DOWN_AGENT,
    DOWN_VERIFIER,
    MALFORMED_AGENT,
    MALFORMED_ARGUMENTS,
    VERIFIER,
    WORLD,
    RecordingEndpoint,
    recording_endpoint,
)

from occusim.analysis import load_rows
from occusim.occubench import load_harness
from tests.helpers import occubench_sample_path

SAMPLE = occubench_sample_path()
TASK_IDS = ("11", "151")
MODES = ("E0", "E1", "E2", "E3")
REFERENCE_KEY, OCCUSIM_KEY = "reference-harness", "occusim-run"

pytestmark = pytest.mark.occubench_harness


OBSERVATION_PATTERN = (
    load_harness(f"occubench:{SAMPLE}").world_model_observation_pattern if (SAMPLE / "occubench").is_dir() else ""
)


def _reference_runs(endpoint: RecordingEndpoint, out: Path, *, agent: str = AGENT,
                    modes: tuple[str, ...] = MODES, verifier: str = VERIFIER) -> None:
    """OccuBench's `python -m occubench.evaluate`, one process per fault mode, all at once."""
    processes = []
    for mode in modes:
        command = [
            sys.executable, "-m", "occubench.evaluate", "--agent-model", agent, "--world-model", WORLD,
            "--verifier-model", verifier, "--env-mode", mode, "--api-key", REFERENCE_KEY,
            "--base-url", endpoint.url, "--max-workers", "4", "--task-ids", *TASK_IDS,
            "--eval-data", str(SAMPLE / "eval_benchmark_solvable.jsonl"),
            "--scenario-pool", str(SAMPLE / "task_scenario_all_pool.jsonl"),
            "--config-dir", str(SAMPLE / "world_model_configs"), "--output-dir", str(out),
        ]
        env = {**os.environ, "PYTHONPATH": str(SAMPLE)}
        processes.append(subprocess.Popen(command, cwd=out.parent, env=env, stdout=subprocess.PIPE,
                                          stderr=subprocess.STDOUT, text=True))
    for process in processes:
        output, _ = process.communicate(timeout=120)
        assert process.returncode == 0, output


def _occusim_run(endpoint: RecordingEndpoint, out: Path, *, modes: tuple[str, ...] = MODES, trials: int = 1,
                 cache: Path | None = None, agent: str = AGENT, verifier: str = VERIFIER,
                 extra: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "OCCUSIM_NO_CACHE": "1"}
    if cache is not None:
        del env["OCCUSIM_NO_CACHE"]
        env["OCCUSIM_CACHE_PATH"] = str(cache)
    for role in ("AGENT", "WORLD_MODEL", "JUDGE"):
        env[f"OCCUSIM_{role}_API_BASE"] = endpoint.url
        env[f"OCCUSIM_{role}_API_KEY"] = OCCUSIM_KEY
    command = [
        sys.executable, "-m", "occusim", "run", "--protocol", "occubench", "--source", f"occubench:{SAMPLE}",
        "--tasks", ",".join(f"occubench/{task}" for task in TASK_IDS), "--faults", ",".join(modes),
        "--trials", str(trials),
        "--agent-model", f"openai/{agent}", "--world-model", f"openai/{WORLD}", "--judge-model", f"openai/{verifier}",
        "--concurrency", "8", "--no-progress", "--out", str(out), *extra,
    ]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=180)


def _multiset(bodies: list[dict[str, Any]]) -> Counter[str]:
    return Counter(json.dumps(body, sort_keys=True, ensure_ascii=False) for body in bodies)


def _first_difference(reference: Counter[str], ours: Counter[str]) -> str:
    missing = list((reference - ours).elements())
    extra = list((ours - reference).elements())
    if not missing or not extra:
        return f"{len(missing)} request(s) only OccuBench sent, {len(extra)} only occusim sent"
    a, b = json.loads(missing[0]), json.loads(extra[0])
    keys = sorted(set(a) | set(b))
    differing = [key for key in keys if a.get(key) != b.get(key)]
    detail = {key: (a.get(key), b.get(key)) for key in differing if key != "messages"}
    if "messages" in differing:
        pairs = list(zip(a.get("messages", []), b.get("messages", []), strict=False))
        index = next((i for i, (x, y) in enumerate(pairs) if x != y), len(pairs))
        detail["messages"] = (a["messages"][index:index + 1], b["messages"][index:index + 1])
    return f"{len(missing)} request(s) differ; first difference: {json.dumps(detail, ensure_ascii=False)[:3000]}"


def _assert_same_streams(endpoint: RecordingEndpoint, *models: str) -> None:
    """Each model was sent the same multiset of requests by OccuBench's harness and by occusim, and some."""
    for model in models:
        reference = _multiset(endpoint.of(REFERENCE_KEY, model))
        ours = _multiset(endpoint.of(OCCUSIM_KEY, model))
        assert reference, f"OccuBench sent no {model} request"
        assert ours == reference, f"{model}: {_first_difference(reference, ours)}"


def test_occubench_protocol_sends_what_the_reference_harness_sends(tmp_path: Path) -> None:
    with recording_endpoint(OBSERVATION_PATTERN) as endpoint:
        _reference_runs(endpoint, tmp_path / "reference")
        ran = _occusim_run(endpoint, tmp_path / "occusim")
        assert ran.returncode == 0, ran.stderr[-4000:]

        _assert_same_streams(endpoint, AGENT, WORLD, VERIFIER)

        # The sample's fault prompts reached the world model: every fault mode's system prompt is distinct.
        systems = {request["messages"][0]["content"] for request in endpoint.of(OCCUSIM_KEY, WORLD)}
        assert len(systems) == len(MODES) * len(TASK_IDS)
        # Each episode's verifier saw three votes, one unreadable: OccuBench counts it False, 2-1 still passes.
        assert len(endpoint.of(OCCUSIM_KEY, VERIFIER)) == 3 * len(MODES) * len(TASK_IDS)

    _, rows = load_rows(tmp_path / "occusim")
    reference_rows = [
        json.loads(line)
        for path in (tmp_path / "reference").glob("*/results.jsonl")
        for line in path.read_text(encoding="utf-8").splitlines()
    ]
    assert sorted((str(r["task_id"]), r["env_mode"], r["is_correct"]) for r in reference_rows) == sorted(
        (row.task_id.split("/")[1], row.fault_mode, row.passed) for row in rows
    )
    assert all(row.status == "ok" and row.verdict is not None and row.verdict.abstentions == 1 for row in rows)


def test_occubench_trials_are_separate_samples_and_a_rerun_is_served_from_the_cache(tmp_path: Path) -> None:
    # OccuBench sends no seed, so each trial's seed only keys the cache: the two trials each ask every
    # question themselves, and running them again asks the endpoint nothing.
    cache = tmp_path / "responses.sqlite"
    with recording_endpoint(OBSERVATION_PATTERN) as endpoint:
        first = _occusim_run(endpoint, tmp_path / "first", modes=("E0",), trials=2, cache=cache)
        assert first.returncode == 0, first.stderr[-4000:]
        asked = len(endpoint.requests)
        opening = _multiset([body for body in endpoint.of(OCCUSIM_KEY, AGENT) if len(body["messages"]) == 2])
        assert sorted(opening.values()) == [2] * len(TASK_IDS), "each trial asks the agent's first question"
        assert "seed" not in json.dumps([request.body for request in endpoint.requests])
        # The three votes of each episode are three requests, even though their messages are the same.
        assert len(endpoint.of(OCCUSIM_KEY, VERIFIER)) == 3 * 2 * len(TASK_IDS)

        again = _occusim_run(endpoint, tmp_path / "again", modes=("E0",), trials=2, cache=cache)
        assert again.returncode == 0, again.stderr[-4000:]
        assert len(endpoint.requests) == asked, "a re-run of the same trials must be served from the cache"

    first_rows, again_rows = load_rows(tmp_path / "first")[1], load_rows(tmp_path / "again")[1]
    assert sorted((row.key, row.passed) for row in first_rows) == sorted((row.key, row.passed) for row in again_rows)


def _reference_rows(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for path in out.glob("*/results.jsonl")
            for line in path.read_text(encoding="utf-8").splitlines()]


def test_arguments_that_are_not_a_json_object_go_to_the_world_model_as_the_harness_sends_them(tmp_path: Path) -> None:
    modes = ("E0", "E1")
    with recording_endpoint(OBSERVATION_PATTERN) as endpoint:
        _reference_runs(endpoint, tmp_path / "reference", agent=MALFORMED_AGENT, modes=modes)
        ran = _occusim_run(endpoint, tmp_path / "occusim", modes=modes, agent=MALFORMED_AGENT)
        assert ran.returncode == 0, ran.stderr[-4000:]

        _assert_same_streams(endpoint, MALFORMED_AGENT, WORLD, VERIFIER)
        # The agent was asked once per turn (no re-asking), and the world model was shown the raw text.
        assert len(endpoint.of(OCCUSIM_KEY, MALFORMED_AGENT)) == 2 * len(modes) * len(TASK_IDS)
        shown = [message["content"] for request in endpoint.of(OCCUSIM_KEY, WORLD) for message in request["messages"]]
        # The action the world model reads is a JSON object whose `arguments` is the agent's string.
        for arguments in MALFORMED_ARGUMENTS:
            assert any(json.dumps(arguments, ensure_ascii=False) in content for content in shown)

    _, rows = load_rows(tmp_path / "occusim")
    # Every episode is scored, with the harness's verdict, none an infrastructure error.
    assert all(row.status == "ok" and row.steps == 2 for row in rows)
    assert sorted((str(r["task_id"]), r["env_mode"], r["is_correct"]) for r in _reference_rows(tmp_path / "reference")) \
        == sorted((row.task_id.split("/")[1], row.fault_mode, row.passed) for row in rows)


@pytest.mark.parametrize(("agent", "verifier"), [(DOWN_AGENT, VERIFIER), (AGENT, DOWN_VERIFIER)])
def test_outages_are_scored_as_the_harness_scores_them_under_outage_policy_harness(tmp_path: Path, agent: str,
                                                                                   verifier: str) -> None:
    with recording_endpoint(OBSERVATION_PATTERN) as endpoint:
        _reference_runs(endpoint, tmp_path / "reference", agent=agent, verifier=verifier, modes=("E0",))
        ran = _occusim_run(endpoint, tmp_path / "occusim", modes=("E0",), agent=agent, verifier=verifier,
                           extra=("--outage-policy", "harness"))
        assert ran.returncode == 0, ran.stderr[-4000:]

        # A down agent leaves the world model nothing to answer.
        _assert_same_streams(endpoint, agent, verifier, *([WORLD] if agent == AGENT else []))
        # Each failing request was tried three times (the OpenAI client's two retries), then given up.
        down = agent if agent == DOWN_AGENT else verifier
        assert len(endpoint.of(OCCUSIM_KEY, down)) == 3 * len(TASK_IDS) * (1 if down == DOWN_AGENT else 3)

    _, rows = load_rows(tmp_path / "occusim")
    assert all(row.status == "ok" and row.outage and row.outage.startswith(down.split("-")[1]) for row in rows)
    assert sorted((str(r["task_id"]), r["is_correct"]) for r in _reference_rows(tmp_path / "reference")) \
        == sorted((row.task_id.split("/")[1], row.passed) for row in rows)
    if down == DOWN_VERIFIER:
        assert not any(row.passed for row in rows)

    # The default policy keeps an outage out of the scores: the episode is an infrastructure error.
    with recording_endpoint(OBSERVATION_PATTERN) as endpoint:
        ran = _occusim_run(endpoint, tmp_path / "infra", modes=("E0",), agent=agent, verifier=verifier,
                           extra=("--infra-retries", "0"))
        assert ran.returncode == 0, ran.stderr[-4000:]
    assert all(row.status == "infra_error" and row.outage is None for row in load_rows(tmp_path / "infra")[1])
