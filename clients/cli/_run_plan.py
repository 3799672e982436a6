"""What `occusim run --dry-run` prints (the combinations and their estimated cost), and the --max-cost notice."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from occusim.analysis import RunConfig
    from occusim.clients import DryRun


def _money(value: float | None) -> str:
    if value is None:
        return "unknown (no price)"
    return f"${value:,.2f}" if value >= 1 else f"${value:.6f}"


def print_plan(plan: DryRun) -> None:
    config, estimate = plan.config, plan.estimate
    done = len(plan.every) - len(plan.work)
    tasks = len({combo.task_id for combo in plan.every})
    print(f"occusim run --dry-run: {len(plan.every)} combination(s) ({tasks} task(s) x {len(config.faults)} fault "
          f"mode(s) x {config.trials} trial(s)); {done} already done, {len(plan.work)} to run")
    for combo in plan.work:
        print(f"  {combo.task_id}  {combo.fault_mode}  trial {combo.trial}")
    basis = (f"measured over the {estimate.measured_from} finished episode(s) of this folder"
             if estimate.measured_from else "estimated from the tasks (reference solution length, tools, state, rubric)")
    print(f"estimated usage of {len(plan.work)} episode(s), {basis}; litellm prices:")
    print(f"  {'role':<12} {'model':<36} {'calls':>8} {'tokens in':>12} {'tokens out':>11}  cost")
    for role, usage in estimate.roles.items():
        print(f"  {role:<12} {usage.model:<36} {usage.calls:>8,.0f} {usage.prompt_tokens:>12,.0f} "
              f"{usage.completion_tokens:>11,.0f}  {_money(usage.cost_usd) if usage.calls else '-'}")
    print(f"  estimated total: {_money(estimate.cost_usd)}"
          + (f" (--max-cost ${config.max_cost:g} stops new episodes once reached)" if config.max_cost else ""))


def warn_unpriced(config: RunConfig) -> None:
    """Name the models litellm has no price for: their calls count as $0 against --max-cost."""
    from occusim.clients import model_price

    unpriced = sorted({model for model in (config.agent_model, config.world_model, config.judge_model)
                       if model_price(model) is None})
    if unpriced:
        print(f"occusim run: litellm has no price for {', '.join(unpriced)}; their calls count as $0 against "
              "--max-cost", file=sys.stderr)
