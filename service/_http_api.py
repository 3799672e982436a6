"""What every REST route of the hosted service shares: the running service and who is calling it."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass

from fastapi import Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from occusim.environments import Catalog
from occusim.rest import ApiError, unauthorized
from occusim.server import BackgroundJudging, EpisodeService

from ._auth import ApiKeys, EpisodeTokens
from ._config import ServiceSettings
from ._counters import CountersUnavailableError
from ._mcp_http import EpisodeEndpoints
from ._tenant_limits import TenantLimiter, TenantLimitError

# Parsing only (auto_error off): the routes answer a missing or wrong credential with their own 401.
_API_KEY = HTTPBearer(scheme_name="apiKey", description="A tenant API key.", auto_error=False)
_EPISODE_TOKEN = HTTPBearer(
    scheme_name="episodeToken", description="The token returned with the episode (POST /v1/episodes).",
    auto_error=False,
)
API_KEY_CREDENTIALS = Security(_API_KEY)
EPISODE_TOKEN_CREDENTIALS = Security(_EPISODE_TOKEN)


@dataclass
class Hosted:
    """The running service as its routes see it."""

    settings: ServiceSettings
    catalog: Catalog
    service: EpisodeService
    api_keys: ApiKeys | None  # None: auth is off (loopback only)
    tokens: EpisodeTokens
    judging: BackgroundJudging
    endpoints: EpisodeEndpoints
    limits: TenantLimiter

    def tenant_dependency(self) -> Callable[..., Awaitable[str | None]]:
        """A dependency giving the caller's tenant from its API key; None when the service runs without auth."""

        async def tenant(credentials: HTTPAuthorizationCredentials | None = API_KEY_CREDENTIALS) -> str | None:
            if self.api_keys is None:
                return None
            found = self.api_keys.tenant(credentials.credentials if credentials else None)
            if found is None:
                raise unauthorized("missing or unknown API key: send it as 'Authorization: Bearer <key>'",
                                   presented=credentials is not None)
            return found

        return tenant


@contextlib.contextmanager
def tenant_limits_answered() -> Iterator[None]:
    """A limit reached as 429, and counters that cannot be reached as 503, both with Retry-After."""
    try:
        yield
    except TenantLimitError as error:
        raise ApiError(429, error.kind, str(error), headers={"Retry-After": str(error.retry_after)}) from None
    except CountersUnavailableError as error:
        raise ApiError(503, "limits_unavailable", f"tenant limits cannot be checked: {error}",
                       headers={"Retry-After": "5"}) from None
