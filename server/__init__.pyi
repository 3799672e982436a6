# The public names of occusim.server. `__init__.py` loads them lazily from this list, so that importing one name
# loads only the modules it needs, while type checkers see the real types.
from ._api_models import (
    CreateEpisodeRequest,
    CreateEpisodeResponse,
    EpisodeView,
    SubmitRequest,
    TenantLimits,
    TenantUsage,
    ViewerLinkRequest,
    ViewerLinkResponse,
)
from ._audit import audit_step, patch_flags
from ._audit_selftest import AuditSelftest, GoldenStep, MutationTally, golden_steps, run_audit_selftest
from ._config import ConfigError, ServiceSettings, data_dir, default_store_url, is_loopback, load_settings
from ._counters import Counters, CountersUnavailableError, MemoryCounters, RedisCounters
from ._episode import Episode, JudgeHook, StepOutcome
from ._episodes import EpisodeService
from ._errors import (
    EpisodeClosedError,
    EpisodeError,
    EpisodeExistsError,
    EpisodeNotFoundError,
    InvalidArgumentsError,
    RefusedInputError,
    SimulatorError,
    SimulatorUnavailableError,
    StepConflictError,
    StepLimitError,
    StoreError,
    StoreUnavailableError,
    StoreVersionError,
    UnknownToolError,
)
from ._faults import FaultSchedule, FaultTally, PlannedFault, fault_rules, fault_tally
from ._judging import BackgroundJudging, judge_hook, occubench_judge_hook
from ._mcp_server import SUBMIT_TOOL, TASK_PROMPT, TASK_RESOURCE, build_mcp_server
from ._stdio import serve_stdio
from ._store import EpisodeSummary, Judgment, Store, normalize_url
from ._viewer_source import StoreEpisodes
from ._world_model import Simulation, WorldModel
from .app import create_app

__all__ = [
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
    "ConfigError",
    "CreateEpisodeRequest",
    "CreateEpisodeResponse",
    "ServiceSettings",
    "Counters",
    "CountersUnavailableError",
    "MemoryCounters",
    "RedisCounters",
    "TenantLimits",
    "TenantUsage",
    "build_mcp_server",
    "create_app",
    "data_dir",
    "default_store_url",
    "is_loopback",
    "judge_hook",
    "occubench_judge_hook",
    "load_settings",
    "normalize_url",
    "serve_stdio",
    "Episode",
    "EpisodeClosedError",
    "EpisodeError",
    "EpisodeExistsError",
    "EpisodeNotFoundError",
    "EpisodeService",
    "EpisodeView",
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
    "SubmitRequest",
    "Store",
    "StoreEpisodes",
    "StoreError",
    "StoreUnavailableError",
    "StoreVersionError",
    "UnknownToolError",
    "ViewerLinkRequest",
    "ViewerLinkResponse",
    "WorldModel",
    "fault_rules",
    "fault_tally",
]
