# The public names of occusim.service. `__init__.py` loads them lazily from this list, so that importing one name
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
from ._config import ConfigError, ServiceSettings, data_dir, default_store_url, is_loopback, load_settings
from ._counters import Counters, CountersUnavailableError, MemoryCounters, RedisCounters
from ._viewer_source import StoreEpisodes
from .app import create_app

__all__ = [
    "ConfigError",
    "Counters",
    "CountersUnavailableError",
    "CreateEpisodeRequest",
    "CreateEpisodeResponse",
    "EpisodeView",
    "MemoryCounters",
    "RedisCounters",
    "ServiceSettings",
    "StoreEpisodes",
    "SubmitRequest",
    "TenantLimits",
    "TenantUsage",
    "ViewerLinkRequest",
    "ViewerLinkResponse",
    "create_app",
    "data_dir",
    "default_store_url",
    "is_loopback",
    "load_settings",
]
