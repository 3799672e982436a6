"""occusim tasks inside reinforcement-learning loops: thin adapters over the episode API for Gymnasium,
TRL, verifiers and OpenEnv (each framework's own package is imported only by its adapter, on use)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._rollouts import Rollout, RolloutError, RolloutPool, ToolResult

if TYPE_CHECKING:
    from ._gym import OccusimEnv

__all__ = ["OccusimEnv", "Rollout", "RolloutError", "RolloutPool", "ToolResult"]


def __getattr__(name: str) -> Any:
    # Gymnasium is the `occusim[rl]` extra: imported when OccusimEnv is asked for, not with the package.
    if name == "OccusimEnv":
        from ._gym import OccusimEnv

        return OccusimEnv
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
