"""The service as an OAuth 2.1 resource server (MCP authorization): JWT access tokens from one issuer,
checked against its JWKS for signature, issuer, audience (the resource, RFC 8707) and expiry, each mapped
to a tenant by a claim. Its settings and metadata routes are in `_oauth_settings.py`, which the service's
configuration (and so every run's transport) reads without loading the JWT and HTTP libraries this needs."""

from __future__ import annotations

import time
from contextlib import AbstractAsyncContextManager, nullcontext
from typing import Any

import httpx
import jwt
from mcp.server.auth.provider import AccessToken

from occusim.environments import OccusimError

from ._oauth_settings import OAuthSettings

# An unknown key id makes the verifier fetch the JWKS again (key rotation), at most this often.
JWKS_REFRESH_SECONDS = 30.0
_ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"]


class OAuthConfigError(OccusimError):
    """The issuer's metadata or keys cannot be read: the message names the URL and the reason."""


class JwtVerifier:
    """A `TokenVerifier` (the MCP SDK's protocol) for JWT access tokens of `settings.issuer`.

    The JWKS address comes from the issuer's authorization-server (or OpenID) metadata; keys are cached and
    fetched again for a key id not seen yet. A token is valid when signed by one of the keys, issued by the
    issuer, for the resource (`aud`), unexpired and carrying the tenant claim; scopes are checked by the caller.
    """

    def __init__(self, settings: OAuthSettings, *, http: httpx.AsyncClient | None = None) -> None:
        self.settings = settings
        self._http = http
        self._keys: dict[str, jwt.PyJWK] = {}
        self._jwks_uri: str | None = None
        self._fetched_at = 0.0

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            return None
        key = await self._key(header.get("kid"))
        if key is None:
            return None
        try:
            claims: dict[str, Any] = jwt.decode(
                token, key=key, algorithms=_ALGORITHMS, audience=self.settings.resource,
                issuer=self.settings.issuer, options={"require": ["exp", "iss", "aud"]}, leeway=5,
            )
        except jwt.PyJWTError:
            return None
        tenant = claims.get(self.settings.tenant_claim)
        if not isinstance(tenant, str) or not tenant:
            return None
        scope = claims.get("scope", claims.get("scp", ""))
        scopes = scope.split() if isinstance(scope, str) else [str(s) for s in scope]
        return AccessToken(token=token, client_id=str(claims.get("client_id") or claims.get("azp") or ""),
                           scopes=scopes, expires_at=int(claims["exp"]), resource=self.settings.resource,
                           subject=claims.get("sub"), claims={"tenant": tenant, "iss": claims["iss"]})

    async def _key(self, kid: str | None) -> jwt.PyJWK | None:
        known = self._keys.get(kid or "")
        if known is not None:
            return known
        if time.monotonic() - self._fetched_at < JWKS_REFRESH_SECONDS and self._keys:
            return None
        try:
            await self._fetch_keys()
        except OAuthConfigError:
            return None
        if kid is None and len(self._keys) == 1:
            return next(iter(self._keys.values()))
        return self._keys.get(kid or "")

    async def _fetch_keys(self) -> None:
        self._fetched_at = time.monotonic()
        async with self._client() as http:
            if self._jwks_uri is None:
                self._jwks_uri = await _jwks_uri(http, self.settings.issuer)
            answer = await _get_json(http, self._jwks_uri)
        keys: dict[str, jwt.PyJWK] = {}
        for entry in answer.get("keys", []) if isinstance(answer, dict) else []:
            if entry.get("use", "sig") != "sig":
                continue
            try:
                keys[str(entry.get("kid", ""))] = jwt.PyJWK(entry)
            except jwt.PyJWTError:
                continue  # a key type or algorithm this build cannot use
        self._keys = keys

    def _client(self) -> AbstractAsyncContextManager[httpx.AsyncClient]:
        if self._http is not None:
            return nullcontext(self._http)  # the caller's client, left open
        return httpx.AsyncClient(timeout=10, follow_redirects=False)


async def _jwks_uri(http: httpx.AsyncClient, issuer: str) -> str:
    base = issuer.rstrip("/")
    for suffix in ("/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"):
        try:
            metadata = await _get_json(http, base + suffix)
        except OAuthConfigError:
            continue
        if isinstance(metadata, dict) and isinstance(metadata.get("jwks_uri"), str):
            if metadata.get("issuer", issuer).rstrip("/") != base:
                raise OAuthConfigError(f"{base + suffix}: names issuer {metadata.get('issuer')!r}, not {issuer!r}")
            return str(metadata["jwks_uri"])
    raise OAuthConfigError(f"no authorization-server metadata with a jwks_uri at {base}/.well-known/")


async def _get_json(http: httpx.AsyncClient, url: str) -> Any:
    try:
        response = await http.get(url)
        response.raise_for_status()
        return response.json()
    except (httpx.HTTPError, ValueError) as error:
        raise OAuthConfigError(f"{url}: {error}") from None
