"""Trials that measure reliability: each trial sends its own seed to the world model and the agent over a
real OpenAI-compatible HTTP endpoint, so trials are separate samples, and re-running a trial is served
from the response cache without a single request."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from occusim.analysis import RunConfig
from occusim.clients import run_batch
from occusim.llm import ResponseCache, set_default_cache
from tests.helpers import TASK_A, ReplayWorld, ScriptedAgent, ScriptedProvider, passing_judge


@pytest.fixture
def provider(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedProvider]:
    agent = ScriptedAgent(lambda task_id, seed: "replay")
    fake = ScriptedProvider({"fake-world": ReplayWorld(), "fake-agent": agent})
    with fake.running():
        for name, value in fake.environment(("WORLD_MODEL", "AGENT")).items():
            monkeypatch.setenv(name, value)
        yield fake


def config(**overrides: Any) -> RunConfig:
    values: dict[str, Any] = dict(
        agent_model="openai/fake-agent", world_model="openai/fake-world", judge_model=passing_judge("trials-judge"),
        tasks=TASK_A, faults=["E0"], trials=3, seed=40, concurrency=2,
    )
    values.update(overrides)
    return RunConfig(**values)


async def test_each_trial_is_its_own_sample_and_a_rerun_is_served_from_the_cache(provider: ScriptedProvider,
                                                                                  tmp_path: Path):
    cache = ResponseCache(tmp_path / "responses.sqlite")
    set_default_cache(cache)

    first = await run_batch(config(), tmp_path / "first", show_progress=False)
    assert first.ran == 3 and all(row.status == "ok" for row in first.rows)
    world, agent = provider.of("fake-world"), provider.of("fake-agent")
    # Every request carries its trial's seed, natively; the world model samples at temperature 0 and the
    # agent at the default 1.
    assert {body["seed"] for body in world} == {body["seed"] for body in agent} == {40, 41, 42}
    assert {body["temperature"] for body in world} == {0.0} and {body["temperature"] for body in agent} == {1.0}
    # The trials ask the world model the same first question: one request per trial, none served from
    # another trial's cache entry.
    seeds_by_prompt: dict[str, list[int]] = {}
    for body in world:
        seeds_by_prompt.setdefault(json.dumps(body["messages"]), []).append(body["seed"])
    assert any(sorted(seeds) == [40, 41, 42] for seeds in seeds_by_prompt.values())
    assert cache.hits == 0

    requests_before = len(provider.requests)
    again = await run_batch(config(), tmp_path / "again", show_progress=False)
    assert again.ran == 3 and all(row.status == "ok" for row in again.rows)
    assert len(provider.requests) == requests_before, "a re-run must be served from the cache"
    for row in again.rows:
        assert row.usage["world_model"].calls == 0 and row.usage["world_model"].cached_calls > 0
        assert row.usage["agent"].calls == 0 and row.usage["agent"].cached_calls > 0
    assert cache.hits == cache.misses

    # A fourth trial is new: only it reaches the provider.
    await run_batch(config(trials=4), tmp_path / "again", show_progress=False)
    assert {body["seed"] for body in provider.requests[requests_before:]} == {43}


async def test_result_rows_count_the_faults_planned_and_met(provider: ScriptedProvider, tmp_path: Path):
    set_default_cache(ResponseCache(tmp_path / "responses.sqlite"))
    summary = await run_batch(config(faults=["E0", "E1", "E3"], trials=2, fault_count=1, fault_duration=1),
                              tmp_path / "run", show_progress=False)
    rows = {(row.fault_mode, row.trial): row for row in summary.rows}
    assert len(rows) == 6 and all(row.status == "ok" for row in rows.values())
    for (mode, _trial), row in rows.items():
        planned = 0 if mode == "E0" else 1
        assert (row.faults_planned, row.faults_met, row.too_short_for_faults) == (planned, planned, False)
        assert not row.faults_not_applicable
        assert len(row.faults_injected) == planned

    # Three faults of two calls need 9 calls; the replayed task makes fewer, and the row says so.
    short = await run_batch(config(faults=["E1"], trials=1, fault_count=3, fault_duration=2),
                            tmp_path / "short", show_progress=False)
    (row,) = short.rows
    assert row.steps < 9
    assert row.faults_planned == 3 and row.faults_met < 3
    # The faults are spread over twice the calls they need (or the task's max_steps, if fewer).
    assert row.fault_window is not None and 9 <= row.fault_window <= 18
    assert row.too_short_for_faults and not row.faults_not_applicable

    # --fault-window sets the window (never under twice the calls the faults need); the row records it.
    wide = await run_batch(config(faults=["E1"], trials=1, fault_count=1, fault_duration=1, fault_window=7),
                           tmp_path / "wide", show_progress=False)
    (row,) = wide.rows
    assert row.fault_window == 7 and row.faults_planned == 1
    assert row.faults_met == len(row.faults_injected) and row.too_short_for_faults == (row.faults_met == 0)


async def test_the_harness_outage_policy_needs_the_occubench_protocol(tmp_path: Path):
    from occusim.analysis import RunError

    with pytest.raises(RunError, match="--outage-policy harness .* needs --protocol occubench"):
        await run_batch(config(outage_policy="harness"), tmp_path / "run", show_progress=False)
