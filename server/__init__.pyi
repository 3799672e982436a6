# The public names of occusim.server. `__init__.py` loads them lazily from this list, so that importing one name
# loads only the modules it needs, while type checkers see the real types.
from ._audit import audit_step, patch_flags
from ._audit_golden import GoldenStep, golden_steps
from ._audit_selftest import AuditSelftest, MutationTally, run_audit_selftest
from ._episode import Episode
from ._episodes import DEFAULT_MAX_CONCURRENT_CALLS, EPISODE_ID, EpisodeService
from ._errors import (
    EpisodeClosedError,
    EpisodeError,
    EpisodeExistsError,
    EpisodeNotFoundError,
    InvalidArgumentsError,
    RefusedInputError,
    SimulatorError,
    SimulatorUnavailableError,
    SpendLimitError,
    StepConflictError,
    StepLimitError,
    StoreError,
    StoreUnavailableError,
    StoreVersionError,
    UnknownToolError,
)
from ._faults import FaultSchedule, FaultTally, PlannedFault, fault_rules, fault_tally
from ._judging import BackgroundJudging
from ._mcp_server import (
    SUBMIT_TOOL,
    TASK_PROMPT,
    TASK_RESOURCE,
    build_mcp_server,
    call_episode_tool,
    scenario_tools,
    task_brief,
)
from ._protocol import (
    NATIVE,
    NATIVE_MODES,
    JudgeHook,
    NativeSimulation,
    SimulationProtocol,
    StepOutcome,
    SteppedEpisode,
    judge_hook,
)
from ._stdio import serve_stdio
from ._store import DEFAULT_MAX_OVERFLOW, DEFAULT_POOL_SIZE, EpisodeSummary, Judgment, Store, normalize_url
from ._world_model import DEFAULT_CALL_DEADLINE, Simulation, WorldModel, ask_world_model

__all__ = [
    "DEFAULT_CALL_DEADLINE",
    "DEFAULT_MAX_CONCURRENT_CALLS",
    "DEFAULT_MAX_OVERFLOW",
    "DEFAULT_POOL_SIZE",
    "EPISODE_ID",
    "audit_step",
    "patch_flags",
    "AuditSelftest",
    "MutationTally",
    "GoldenStep",
    "golden_steps",
    "run_audit_selftest",
    "SUBMIT_TOOL",
    "TASK_PROMPT",
    "TASK_RESOURCE",
    "BackgroundJudging",
    "build_mcp_server",
    "call_episode_tool",
    "scenario_tools",
    "task_brief",
    "judge_hook",
    "NATIVE",
    "NATIVE_MODES",
    "NativeSimulation",
    "SimulationProtocol",
    "SteppedEpisode",
    "ask_world_model",
    "normalize_url",
    "serve_stdio",
    "Episode",
    "EpisodeClosedError",
    "EpisodeError",
    "SpendLimitError",
    "EpisodeExistsError",
    "EpisodeNotFoundError",
    "EpisodeService",
    "EpisodeSummary",
    "FaultSchedule",
    "FaultTally",
    "InvalidArgumentsError",
    "JudgeHook",
    "Judgment",
    "PlannedFault",
    "RefusedInputError",
    "Simulation",
    "SimulatorError",
    "SimulatorUnavailableError",
    "StepConflictError",
    "StepLimitError",
    "StepOutcome",
    "Store",
    "StoreError",
    "StoreUnavailableError",
    "StoreVersionError",
    "UnknownToolError",
    "WorldModel",
    "fault_rules",
    "fault_tally",
]
