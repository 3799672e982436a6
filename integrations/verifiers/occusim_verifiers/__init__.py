"""occusim tasks as a verifiers 0.4 taskset (`vf-eval occusim-verifiers ...`): an occusim episode per rollout,
its MCP tools forwarded to the agent, submit_result ending the rollout and the judge's verdict as the reward."""

from ._episodes import EpisodeApiError
from ._service import ServiceStartError
from ._taskset import OccusimConfig, OccusimData, OccusimTask, OccusimTaskConfig, OccusimTaskset
from ._toolset import OccusimState, OccusimToolset

__all__ = [
    "EpisodeApiError",
    "OccusimConfig",
    "OccusimData",
    "OccusimState",
    "OccusimTask",
    "OccusimTaskConfig",
    "OccusimTaskset",
    "OccusimToolset",
    "ServiceStartError",
]
