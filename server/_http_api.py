"""What every REST route of the hosted service shares: the running service and who is calling it."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass

from fastapi import Request, Security
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from occusim.environments import Catalog
from occusim.rest import ApiError, unauthorized

from ._auth import ApiKeys, EpisodeTokens
from ._config import ServiceSettings
from ._counters import CountersUnavailableError
from ._episodes import EpisodeService
from ._errors import SpendLimitError
from ._judging import BackgroundJudging
from ._mcp_http import EpisodeEndpoints
from ._tenant_limits import TenantLimiter, TenantLimitError

log = logging.getLogger("occusim.server")

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

    def caller(self, request: Request) -> str | None:
        """The tenant of the request's API key (None without auth, or for a key that is not a tenant's)."""
        if self.api_keys is None:
            return None
        scheme, _, key = request.headers.get("authorization", "").partition(" ")
        return self.api_keys.tenant(key.strip()) if scheme.lower() == "bearer" else None

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
    except (TenantLimitError, SpendLimitError) as error:
        raise ApiError(429, error.kind, str(error), headers={"Retry-After": str(error.retry_after)}) from None
    except CountersUnavailableError as error:
        # The cause names the Redis address: for the operator's log, not for tenants.
        log.warning("tenant limits cannot be checked: %s", error)
        raise ApiError(503, "limits_unavailable", "tenant limits cannot be checked: the shared usage counters "
                       "are unreachable; retry shortly", headers={"Retry-After": "5"}) from None
