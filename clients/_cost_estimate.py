"""`--dry-run`: what a batch would cost, per role, before any call is made.

Per episode, each role's calls and tokens come from the finished rows of the run folder where it has some
(measured), else from the tasks themselves (estimated: the reference solution's length and sizes, the
tools' schemas, the state, the rubric; about 4 characters a token). Prices are litellm's.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from occusim.analysis import Combination, ResultRow, RunConfig
from occusim.environments import Catalog, Task, Usage
from occusim.llm import ModelConfig, sum_usage

ROLES = ("agent", "world_model", "judge")
CHARS_PER_TOKEN = 4
# Calls an episode makes when its task has no reference solution to take the length from.
DEFAULT_STEPS = 8
# Fixed parts of the prompts occusim writes (instructions, formats), in tokens.
AGENT_PREAMBLE = 300
WORLD_PREAMBLE = 700
JUDGE_PREAMBLE = 600
# History calls a tracked-mode world-model prompt carries.
WORLD_HISTORY = 4


@dataclass(frozen=True)
class Price:
    """USD per token, in and out; None where litellm knows no price for the model."""

    prompt: float
    completion: float


@dataclass
class RoleEstimate:
    model: str
    calls: float = 0.0
    prompt_tokens: float = 0.0
    completion_tokens: float = 0.0
    price: Price | None = None

    @property
    def cost_usd(self) -> float | None:
        if self.price is None:
            return None
        return self.prompt_tokens * self.price.prompt + self.completion_tokens * self.price.completion


@dataclass
class CostEstimate:
    """The estimated usage of the combinations still to run, summed over them, by role."""

    episodes: int
    # The finished rows the figures are measured from; 0 when they are estimated from the tasks.
    measured_from: int = 0
    roles: dict[str, RoleEstimate] = field(default_factory=dict)

    @property
    def cost_usd(self) -> float | None:
        """The total, or None when a role that makes calls has no known price."""
        costs = [role.cost_usd for role in self.roles.values() if role.calls]
        return None if any(cost is None for cost in costs) else sum(cost or 0.0 for cost in costs)


def model_price(model: str) -> Price | None:
    """litellm's price of `model`; free for scripted and local models; None when unknown."""
    config = ModelConfig(model=model)
    if config.is_scripted or config.is_local or model == "reference-replay":
        return Price(0.0, 0.0)
    import litellm

    try:
        info = litellm.get_model_info(model)
    except Exception:  # litellm raises its own error types for a model it has no entry for
        return None
    prompt, completion = info.get("input_cost_per_token"), info.get("output_cost_per_token")
    if prompt is None or completion is None:
        return None
    return Price(float(prompt), float(completion))


def _tokens(value: object) -> float:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return len(text) / CHARS_PER_TOKEN


def episode_usage(config: RunConfig, catalog: Catalog, task: Task) -> dict[str, Usage]:
    """The usage of one episode of `task`, by role, estimated from the task and its scenario."""
    scenario = catalog.scenario_of(task)
    steps = task.reference_solution
    count = len(steps) or DEFAULT_STEPS
    observation = sum(_tokens(step.observation) for step in steps) / len(steps) if steps else 150.0
    call = sum(_tokens(step.arguments) for step in steps) / len(steps) + 15 if steps else 40.0
    tools = _tokens([tool.model_dump(include={"name", "description", "input_schema"}) for tool in scenario.tools])
    state = _tokens(catalog.initial_state(task))
    # The agent re-reads its whole conversation each turn: one turn per call, and one to submit.
    agent_base = AGENT_PREAMBLE + _tokens(task.instruction) + tools
    agent_prompt = (count + 1) * agent_base + (observation + call) * count * (count + 1) / 2
    world_prompt = count * (WORLD_PREAMBLE + _tokens(scenario.rules) + tools / len(scenario.tools) + state
                            + WORLD_HISTORY * (observation + call))
    checks = sum(len(item.checks) for item in task.rubric.items if item.kind == "llm")
    judge_calls = config.judge_votes if checks else 0
    judge_prompt = judge_calls * (JUDGE_PREAMBLE + _tokens(task.instruction) + count * (observation + call)
                                  + 30 * checks)
    replay = config.agent_model == "reference-replay"
    agent = Usage() if replay else Usage(calls=count + 1, prompt_tokens=round(agent_prompt),
                                         completion_tokens=round((count + 1) * (call + 30)))
    return {
        "agent": agent,
        "world_model": Usage(calls=count, prompt_tokens=round(world_prompt),
                             completion_tokens=round(count * (observation + 60))),
        "judge": Usage(calls=judge_calls, prompt_tokens=round(judge_prompt),
                       completion_tokens=round(judge_calls * 60 * max(checks, 1))),
    }


def estimate_cost(config: RunConfig, catalog: Catalog, work: list[Combination],
                  finished: list[ResultRow]) -> CostEstimate:
    """The usage and cost of running `work`: measured from `finished` rows when there are any, else estimated."""
    models = {"agent": config.agent_model, "world_model": config.world_model, "judge": config.judge_model}
    estimate = CostEstimate(episodes=len(work), roles={
        role: RoleEstimate(model=models[role], price=model_price(models[role])) for role in ROLES
    })
    measured = [row for row in finished if row.status in ("ok", "unjudged")]
    if measured:
        estimate.measured_from = len(measured)
        for role, target in estimate.roles.items():
            total = sum_usage(row.usage.get(role, Usage()) for row in measured)
            target.calls = len(work) * total.calls / len(measured)
            target.prompt_tokens = len(work) * total.prompt_tokens / len(measured)
            target.completion_tokens = len(work) * total.completion_tokens / len(measured)
        return estimate
    per_task = {task_id: episode_usage(config, catalog, catalog.task(task_id))
                for task_id in {combo.task_id for combo in work}}
    for combo in work:
        for role, usage in per_task[combo.task_id].items():
            target = estimate.roles[role]
            target.calls += usage.calls
            target.prompt_tokens += usage.prompt_tokens
            target.completion_tokens += usage.completion_tokens
    return estimate
