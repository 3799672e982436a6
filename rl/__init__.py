"""occusim tasks inside reinforcement-learning loops, in process: a Gymnasium environment (`OccusimEnv`) and
classes for TRL's `environment_factory` (`occusim.rl.trl`) over a pool of episodes (`RolloutPool`).
Gymnasium is imported only when `OccusimEnv` is used; TRL never. OpenEnv is served by `occusim serve --openenv`
(occusim.service), and verifiers runs the taskset in `integrations/verifiers`, a client of the episode API."""

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
