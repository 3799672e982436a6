"""Cross-simulator agreement: do runs of the same agents and tasks under different world models agree?

For each pair of world models: the share of agent pairs ranked the same way, and per-task outcome agreement
with Cohen's kappa, overall and per category. The formulas are written out in docs/metrics.md.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from itertools import combinations
from pathlib import Path

from pydantic import BaseModel, Field

from occusim.judge import agreement

from ._comparison import unit_completion
from ._results import IDENTITY_FIELDS, ResultRow, RunConfig, RunError, load_rows

ALL = "all"
# Settings that differ by design between the runs compared here.
_COMPARED_FIELDS = ("world_model", "agent_model", "agent_temperature")
Unit = tuple[str, str]  # (task, fault mode)


class RunEntry(BaseModel):
    run: str
    agent: str
    world_model: str


class PairAgreement(BaseModel):
    """How well two world models agree, over what both scored (in one category, or in all: 'all')."""

    category: str
    world_a: str
    world_b: str
    agents: int = Field(description="Agents run under both world models.")
    ranked_tasks: int = Field(description="(task, fault mode) pairs scored for every one of those agents under both.")
    agent_pairs: int
    concordant_pairs: int = Field(description="Agent pairs ordered the same way (ties in both count as the same).")
    rank_agreement: float | None = Field(description="concordant_pairs / agent_pairs; None under two agents.")
    units: int = Field(description="(agent, task, fault mode) outcomes scored under both world models.")
    both_pass: int
    both_fail: int
    pass_a_only: int
    pass_b_only: int
    outcome_agreement: float | None = Field(description="(both_pass + both_fail) / units.")
    kappa: float | None = Field(description="Cohen's kappa of the outcomes; None when undefined.")


class AgentCompletion(BaseModel):
    """An agent's completion under one world model, over every (task, fault mode) pair it scored there."""

    agent: str
    world_model: str
    pairs: int
    completion: float


class SimulatorAgreement(BaseModel):
    runs: list[RunEntry]
    world_models: list[str]
    agents: list[str]
    completion: list[AgentCompletion]
    pairs: list[PairAgreement] = Field(description="One per pair of world models, over every category.")
    by_category: list[PairAgreement]
    other_differences: list[str] = Field(description="Settings other than the agent and world model that differ.")


def spans_world_models(configs: Sequence[RunConfig]) -> bool:
    """Whether these runs can be compared across simulators: some agent was run under two world models."""
    worlds: dict[str, set[str]] = defaultdict(set)
    for config in configs:
        worlds[config.agent_model].add(config.world_model)
    return any(len(models) >= 2 for models in worlds.values())


def _sign(value: float) -> int:
    return (value > 0) - (value < 0)


def _pair(category: str, world_a: str, world_b: str, agents: list[str],
          shares: dict[tuple[str, str], dict[Unit, float]], units_of: set[Unit]) -> PairAgreement:
    """Agreement of world_a and world_b over the units in `units_of` (one category's, or all)."""
    present = [agent for agent in agents if (agent, world_a) in shares and (agent, world_b) in shares]
    tally = agreement(
        (shares[agent, world_a][unit] > 0.5, shares[agent, world_b][unit] > 0.5)
        for agent in present
        for unit in sorted(units_of & shares[agent, world_a].keys() & shares[agent, world_b].keys())
    )
    common = set(units_of)
    for agent in present:
        common &= shares[agent, world_a].keys() & shares[agent, world_b].keys()
    pairs = concordant = 0
    if common:
        rates = {(agent, world): sum(shares[agent, world][unit] for unit in common) / len(common)
                 for agent in present for world in (world_a, world_b)}
        for first, second in combinations(present, 2):
            pairs += 1
            concordant += _sign(rates[first, world_a] - rates[second, world_a]) == _sign(
                rates[first, world_b] - rates[second, world_b])
    return PairAgreement(
        category=category, world_a=world_a, world_b=world_b, agents=len(present), ranked_tasks=len(common),
        agent_pairs=pairs, concordant_pairs=concordant, rank_agreement=concordant / pairs if pairs else None,
        units=tally.total, both_pass=tally.both_pass, both_fail=tally.both_fail, pass_a_only=tally.judge_only,
        pass_b_only=tally.expert_only, outcome_agreement=tally.agreement, kappa=tally.kappa,
    )


def _other_differences(configs: Sequence[RunConfig]) -> list[str]:
    differences = []
    for name in IDENTITY_FIELDS:
        values = sorted({repr(getattr(config, name)) for config in configs})
        if name not in _COMPARED_FIELDS and len(values) > 1:
            differences.append(f"{name}: {' vs '.join(values)}")
    return differences


def simulator_agreement(runs: Sequence[tuple[str, RunConfig, list[ResultRow]]]) -> SimulatorAgreement:
    """Agreement between the world models of `runs` (name, config, rows); RunError when two runs share both
    agent and world model, or no agent was run under two world models."""
    shares: dict[tuple[str, str], dict[Unit, float]] = {}
    categories: dict[Unit, str] = {}
    seen: dict[tuple[str, str], str] = {}
    for name, config, rows in runs:
        key = (config.agent_model, config.world_model)
        if key in seen:
            raise RunError(f"{seen[key]} and {name} both ran agent {key[0]} under world model {key[1]}; "
                           "give one run per agent and world model")
        seen[key] = name
        shares[key] = unit_completion(rows)
        categories.update({(row.task_id, row.fault_mode): row.category for row in rows if row.scored})
    if not spans_world_models([config for _, config, _ in runs]):
        raise RunError("no agent was run under two world models; cross-simulator agreement needs the same agents "
                       "run under at least two")
    worlds = sorted({world for _, world in shares})
    agents = sorted({agent for agent, _ in shares})
    every = set(categories)
    pairs = [_pair(ALL, a, b, agents, shares, every) for a, b in combinations(worlds, 2)]
    by_category = [
        _pair(category, a, b, agents, shares, {unit for unit in every if categories[unit] == category})
        for category in sorted(set(categories.values())) for a, b in combinations(worlds, 2)
    ]
    completion = [AgentCompletion(agent=agent, world_model=world, pairs=len(values),
                                  completion=sum(values.values()) / len(values))
                  for (agent, world), values in sorted(shares.items()) if values]
    return SimulatorAgreement(
        runs=[RunEntry(run=name, agent=config.agent_model, world_model=config.world_model)
              for name, config, _ in runs],
        world_models=worlds, agents=agents, completion=completion, pairs=pairs, by_category=by_category,
        other_differences=_other_differences([config for _, config, _ in runs]),
    )


def load_runs(folders: Sequence[str | Path]) -> list[tuple[str, RunConfig, list[ResultRow]]]:
    """(name, config, rows) of each run folder; raises RunError when one is not a run folder."""
    return [(str(folder), *load_rows(folder)) for folder in folders]
