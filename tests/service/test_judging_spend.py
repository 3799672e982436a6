"""Background judgments (after submit) hold the tenant's spend before the judge's model calls and count it
before letting go, as tool calls and `POST /v1/judge` do: judgments in flight together cannot pass the cap."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
from pydantic import BaseModel

from occusim.environments import EpisodeRecord, Scenario, Task
from occusim.server import BackgroundJudging, EpisodeService, Store
from occusim.service import MemoryCounters, TenantLimits
from occusim.service._tenant_limits import TenantLimiter
from tests.helpers import CHEST_PAIN, TriageModel, triage_catalog

JUDGMENT_USD = 0.015


@pytest.fixture
async def sqlite_store(tmp_path: Path) -> AsyncIterator[Store]:
    store = Store(tmp_path / "episodes.db")
    await store.init()
    yield store
    await store.close()


def judged_service(
    store: Store, limits: TenantLimiter, judge: Callable[[Task, Scenario, EpisodeRecord], Awaitable[BaseModel]]
) -> EpisodeService:
    """The triage service whose `judge` spends on the tenants' account through `limits`."""
    return EpisodeService(
        triage_catalog(),
        store,
        world_model=TriageModel().model,
        judge=judge,
        on_cost=limits.record_spend,
        spend_hold=limits.holding_spend,
    )


class Usage(BaseModel):
    cost_usd: float


class PricedVerdict(BaseModel):
    score: float
    passed: bool
    usage: Usage


async def test_judgments_in_flight_together_cannot_pass_the_daily_cap(sqlite_store):
    counters = MemoryCounters()
    limits = TenantLimiter(counters, sqlite_store, tenants={"alice": TenantLimits(cost_per_day_usd=0.02)})
    judged: list[str] = []
    held_while_judging: list[float] = []

    async def judge(task, scenario, record):
        held_while_judging.append(await counters.value("held:alice"))
        await asyncio.sleep(0.2)  # the judge model's latency: the other judgments start meanwhile
        judged.append(record.id)
        return PricedVerdict(score=1.0, passed=True, usage=Usage(cost_usd=JUDGMENT_USD))

    service = judged_service(sqlite_store, limits, judge)
    episodes = [await service.create(CHEST_PAIN, tenant="alice") for _ in range(3)]
    judging = BackgroundJudging()
    for episode in episodes:
        await episode.submit("done", run_judge=False)
        judging.start(episode)
    await judging.drain()

    usage = await limits.usage("alice")
    assert len(judged) == 1, "the first judgment holds the whole cap until a cost is known"
    assert held_while_judging and held_while_judging[0] > 0, "the spend is held while the judge runs"
    assert usage.cost_today_usd == JUDGMENT_USD
    refused = [e for e in episodes if e.id not in judged]
    assert all(e.status == "submitted" and "SpendLimitError" in (e.judge_error or "") for e in refused)
    assert await counters.value("held:alice") == 0, "every hold is given back"

    # Refused judgments stay submitted: judged again (as at the next start) once the cost is known, one
    # more fits alone under the cap, and the last is refused past it.
    for episode in refused:
        judging.start(episode)
        await judging.drain()
    assert len(judged) == 2
    assert (await limits.usage("alice")).cost_today_usd == 2 * JUDGMENT_USD


async def test_a_judgment_without_a_cap_is_counted_and_holds_nothing(sqlite_store):
    counters = MemoryCounters()
    limits = TenantLimiter(counters, sqlite_store)

    async def judge(task, scenario, record):
        return PricedVerdict(score=1.0, passed=True, usage=Usage(cost_usd=JUDGMENT_USD))

    service = judged_service(sqlite_store, limits, judge)
    episode = await service.create(CHEST_PAIN, tenant="bob")
    record = await episode.submit("done")

    assert record.status == "judged"
    assert (await limits.usage("bob")).cost_today_usd == JUDGMENT_USD
    assert await counters.value("held:bob") == 0
