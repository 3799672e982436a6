"""Token, cost and call accounting: per completion from the provider's response, and summed by role."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from occusim.environments import Usage

from ._completion import Completion


def add_usage(a: Usage, b: Usage) -> Usage:
    """Sum two usages; cost stays None only while no part of it is known."""
    if a.cost_usd is None and b.cost_usd is None:
        cost = None
    else:
        cost = (a.cost_usd or 0.0) + (b.cost_usd or 0.0)
    return Usage(
        prompt_tokens=a.prompt_tokens + b.prompt_tokens,
        completion_tokens=a.completion_tokens + b.completion_tokens,
        cost_usd=cost,
        calls=a.calls + b.calls,
        cached_calls=a.cached_calls + b.cached_calls,
        prompt_tokens_reused=a.prompt_tokens_reused + b.prompt_tokens_reused,
    )


def sum_usage(usages: Iterable[Usage]) -> Usage:
    total = Usage()
    for usage in usages:
        total = add_usage(total, usage)
    return total


class UsageLedger:
    """Usage aggregated by role ("world_model", "judge", "agent", ...)."""

    def __init__(self) -> None:
        self.by_role: dict[str, Usage] = {}

    def add(self, role: str, completion_or_usage: Completion | Usage) -> None:
        usage = completion_or_usage.usage if isinstance(completion_or_usage, Completion) else completion_or_usage
        self.by_role[role] = add_usage(self.by_role.get(role, Usage()), usage)

    @property
    def total(self) -> Usage:
        return sum_usage(self.by_role.values())

    def __repr__(self) -> str:
        return f"UsageLedger({self.by_role!r})"


def usage_from_response(response: Any, cost: float | None) -> Usage:
    """Usage of one provider response that cost `cost` (None: unknown)."""
    raw = getattr(response, "usage", None)
    prompt = int(getattr(raw, "prompt_tokens", 0) or 0)
    completion = int(getattr(raw, "completion_tokens", 0) or 0)
    return Usage(prompt_tokens=prompt, completion_tokens=completion, cost_usd=cost, calls=1, cached_calls=0,
                 prompt_tokens_reused=reused_prompt_tokens(raw))


def reused_prompt_tokens(raw: Any) -> int:
    """Prompt tokens served from the provider's prompt cache (OpenAI's `prompt_tokens_details.cached_tokens`,
    which llama.cpp's server also reports)."""
    details = getattr(raw, "prompt_tokens_details", None)
    if isinstance(details, dict):
        cached = details.get("cached_tokens")
    else:
        cached = getattr(details, "cached_tokens", None)
    return cached if isinstance(cached, int) and cached > 0 else 0


def litellm_cost(response: Any) -> float | None:
    """The cost of a response litellm returned, from its price map where it knows the model."""
    import litellm

    hidden = getattr(response, "_hidden_params", None) or {}
    known = hidden.get("response_cost")
    if isinstance(known, (int, float)):
        return float(known)
    try:
        return float(litellm.completion_cost(completion_response=response))
    except Exception:
        # Unknown or self-hosted models have no price entry: report the cost as unknown.
        return None
