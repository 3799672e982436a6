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
from occusim.server import BackgroundJudging, EpisodeService, SpendLimitError

from ._auth import ApiKeys, EpisodeTokens
from ._config import ServiceSettings
from ._counters import CountersUnavailableError
from ._mcp_http import EpisodeEndpoints
from ._oauth import JwtVerifier
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
    oauth: JwtVerifier | None = None  # JWT access tokens of an OAuth issuer, accepted beside API keys

    async def caller(self, request: Request) -> str | None:
        """The tenant of the request's API key or access token (None without auth, or for neither)."""
        if self.api_keys is None:
            return None
        credential = bearer_credential(request.headers.get("authorization"))
        if credential is None:
            return None
        try:
            return await self.tenant_of_credential(credential)
        except ApiError:
            return None

    async def tenant_of_credential(self, credential: str | None) -> str | None:
        """The tenant of an API key, or of a valid access token (403 when it lacks a required scope)."""
        found = self.api_keys.tenant(credential) if self.api_keys is not None else None
        return found if found is not None else await self.signed_in_tenant(credential)

    async def signed_in_tenant(self, credential: str | None) -> str | None:
        """The tenant of a valid OAuth access token; None for anything else, 403 for missing scopes."""
        if self.oauth is None or not credential:
            return None
        token = await self.oauth.verify_token(credential)
        if token is None:
            return None
        missing = sorted(set(self.oauth.settings.scopes) - set(token.scopes))
        if missing:
            raise ApiError(403, "insufficient_scope", f"the access token lacks the scope(s) {', '.join(missing)}",
                           headers={"WWW-Authenticate": self.oauth.settings.challenge("insufficient_scope")})
        return str((token.claims or {})["tenant"])

    def refusal(self, message: str, *, presented: bool) -> ApiError:
        """401 for a missing or wrong credential; with OAuth, the challenge says where to sign in (RFC 9728)."""
        if self.oauth is None:
            return unauthorized(message, presented=presented)
        challenge = self.oauth.settings.challenge("invalid_token" if presented else None)
        return ApiError(401, "unauthorized", message, headers={"WWW-Authenticate": challenge})

    def tenant_dependency(self) -> Callable[..., Awaitable[str | None]]:
        """A dependency giving the caller's tenant from its API key; None when the service runs without auth."""

        async def tenant(credentials: HTTPAuthorizationCredentials | None = API_KEY_CREDENTIALS) -> str | None:
            if self.api_keys is None:
                return None
            found = await self.tenant_of_credential(credentials.credentials if credentials else None)
            if found is None:
                raise self.refusal("missing or unknown API key or access token: send it as "
                                   "'Authorization: Bearer <key>'", presented=credentials is not None)
            return found

        return tenant


def bearer_credential(authorization: str | None) -> str | None:
    """The credential of an `Authorization: Bearer <credential>` header, read as FastAPI's HTTPBearer reads
    it; None for a missing header or another scheme."""
    scheme, _, credential = (authorization or "").partition(" ")
    credential = credential.strip()
    return credential if scheme.lower() == "bearer" and credential else None


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
