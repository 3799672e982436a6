"""`occusim run --max-cost` and `--dry-run`, with priced models (litellm's prices) behind a scripted endpoint."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from occusim.analysis import RunConfig, RunDir
from occusim.clients import plan_batch, run_batch
from occusim.clients._budget import row_cost
from occusim.clients.cli import main
from tests.helpers import TASK_B, ReplayWorld, ScriptedAgent, ScriptedProvider, passing_verdicts

# Models litellm has prices for, answered by the scripted endpoint under their own names.
AGENT, WORLD, JUDGE = "gpt-4.1-mini", "gpt-4.1-nano", "gpt-4.1"


@pytest.fixture
def provider(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedProvider]:
    fake = ScriptedProvider({WORLD: ReplayWorld(), AGENT: ScriptedAgent(lambda task, seed: "replay"),
                             JUDGE: passing_verdicts})
    with fake.running():
        for name, value in fake.environment().items():
            monkeypatch.setenv(name, value)
        yield fake


def config(**overrides: Any) -> RunConfig:
    # Four identical episodes (the same task replayed, no faults): each costs the same.
    values: dict[str, Any] = dict(agent_model=f"openai/{AGENT}", world_model=f"openai/{WORLD}",
                                  judge_model=f"openai/{JUDGE}", tasks=TASK_B, faults=["E0"], trials=4,
                                  concurrency=1, cache=False)
    values.update(overrides)
    return RunConfig(**values)


async def test_max_cost_stops_new_episodes_and_a_rerun_goes_on(provider: ScriptedProvider, tmp_path: Path):
    out = tmp_path / "out"
    first = await run_batch(config(max_cost=1e-9), out, show_progress=False)
    assert first.ran == 1 and first.unscheduled == 3
    episode = row_cost(first.new_rows[0])
    assert episode > 0 and first.spent_usd == pytest.approx(episode)

    second = await run_batch(config(max_cost=1.5 * episode), out, show_progress=False)
    assert second.ran == 2 and second.unscheduled == 1 and second.skipped == 1
    assert second.spent_usd == pytest.approx(2 * episode)

    third = await run_batch(config(), out, show_progress=False)
    assert third.ran == 1 and third.unscheduled == 0 and third.spent_usd is None
    lines = Counter(row.key for row in RunDir(out).read_rows())
    assert len(lines) == 4 and set(lines.values()) == {1}


async def test_dry_run_estimates_from_the_tasks_then_from_finished_rows(provider: ScriptedProvider, tmp_path: Path):
    out = tmp_path / "out"
    fresh = plan_batch(config(), out)
    assert len(fresh.every) == len(fresh.work) == 4 and fresh.estimate.measured_from == 0
    assert not out.exists() and not provider.requests
    estimated = fresh.estimate.roles
    assert all(estimated[role].cost_usd for role in ("agent", "world_model", "judge"))

    ran = await run_batch(config(max_cost=1e-9), out, show_progress=False)
    row = ran.new_rows[0]
    # The replaying agent follows the reference solution, which is what the estimate counts calls by.
    assert estimated["world_model"].calls == 4 * row.usage["world_model"].calls
    assert estimated["agent"].calls == 4 * row.usage["agent"].calls
    assert estimated["judge"].calls == 4 * row.usage["judge"].calls

    measured = plan_batch(config(), out)
    assert len(measured.work) == 3 and measured.estimate.measured_from == 1
    assert measured.estimate.cost_usd == pytest.approx(3 * row_cost(row))


def test_dry_run_prints_the_combinations_and_the_cost(provider: ScriptedProvider, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]):
    out = tmp_path / "out"
    status = main(["run", "--agent-model", f"openai/{AGENT}", "--world-model", f"openai/{WORLD}", "--judge-model",
                   f"openai/{JUDGE}", "--tasks", TASK_B, "--trials", "4", "--dry-run", "--out", str(out)])

    printed = capsys.readouterr().out
    assert status == 0 and not out.exists() and not provider.requests
    assert "4 combination(s) (1 task(s) x 1 fault mode(s) x 4 trial(s)); 0 already done, 4 to run" in printed
    assert all(f"{TASK_B}  E0  trial {trial}" in printed for trial in range(4))
    assert "estimated from the tasks" in printed
    total = next(line for line in printed.splitlines() if "estimated total:" in line)
    assert "$" in total and "unknown" not in total
