# The public names of occusim.service. `__init__.py` loads them lazily from this list, so that importing one name
# loads only the modules it needs, while type checkers see the real types.
from ._api_models import (
    CreateEpisodeRequest,
    CreateEpisodeResponse,
    EpisodeView,
    Health,
    SubmitRequest,
    TenantLimits,
    TenantUsage,
    ViewerLinkRequest,
    ViewerLinkResponse,
)
from ._config import (
    ConfigError,
    ServiceSettings,
    data_dir,
    default_store_url,
    is_loopback,
    load_settings,
    trusted_hosts,
)
from ._counters import Counters, CountersUnavailableError, MemoryCounters, RedisCounters
from ._http_guards import host_guard
from ._openenv_app import create_openenv_app
from ._openenv_env import EpisodeDefaults
from ._shared_secret import check_shared_key
from ._viewer_source import StoreEpisodes
from .app import create_app

__all__ = [
    "ConfigError",
    "Counters",
    "CountersUnavailableError",
    "CreateEpisodeRequest",
    "CreateEpisodeResponse",
    "EpisodeDefaults",
    "EpisodeView",
    "Health",
    "MemoryCounters",
    "RedisCounters",
    "ServiceSettings",
    "StoreEpisodes",
    "SubmitRequest",
    "TenantLimits",
    "TenantUsage",
    "ViewerLinkRequest",
    "ViewerLinkResponse",
    "check_shared_key",
    "create_app",
    "create_openenv_app",
    "data_dir",
    "default_store_url",
    "host_guard",
    "is_loopback",
    "load_settings",
    "trusted_hosts",
]
