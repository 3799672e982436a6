"""The hosted service as an OAuth resource server: RFC 9728 metadata, a challenge naming it, JWT access
tokens checked against the issuer's JWKS (served over HTTP here) for signature, issuer, audience, expiry and
scopes, each mapped to a tenant; API keys and episode tokens keep working."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.helpers import API_KEYS, CHEST_PAIN, LiveServer, hosted_settings, mcp_session

RESOURCE = "https://bench.example.org/"
SCOPE = "occusim:episodes"


class Issuer:
    """An authorization server's metadata and JWKS on loopback, and the tokens it would sign."""

    def __init__(self) -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
        jwks = {"keys": [{**public, "kid": "k1", "use": "sig", "alg": "RS256"}]}
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                documents = {"/.well-known/oauth-authorization-server": {"issuer": issuer.url, "jwks_uri": f"{issuer.url}/jwks"},
                             "/jwks": jwks}
                found = documents.get(self.path)
                body = json.dumps(found).encode() if found is not None else b"{}"
                self.send_response(200 if found is not None else 404)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    def token(self, sub: str = "alice", **claims: Any) -> str:
        values = {"iss": self.url, "aud": RESOURCE, "sub": sub, "exp": int(time.time()) + 300, "scope": SCOPE,
                  "client_id": "connector", **claims}
        key = values.pop("signing_key", self.key)
        return jwt.encode({k: v for k, v in values.items() if v is not None}, key, algorithm="RS256",
                          headers={"kid": "k1"})


@pytest.fixture(scope="module")
def issuer() -> Iterator[Issuer]:
    server = Issuer()
    yield server
    server.http.shutdown()


@pytest.fixture(scope="module")
def served(issuer: Issuer, tmp_path_factory) -> Iterator[LiveServer]:
    # carol has no API key: she exists only as the subject of tokens, and has limits of her own.
    settings = hosted_settings(tmp_path_factory.mktemp("oauth"), oauth_issuer=issuer.url, oauth_resource=RESOURCE,
                               oauth_scopes=[SCOPE], tenant_limits={"carol": {"open_episodes": 1}})
    with LiveServer(settings) as server:
        yield server


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_the_metadata_names_the_issuer_and_a_401_points_at_it(served: LiveServer, issuer: Issuer):
    metadata = httpx.get(f"{served.url}/.well-known/oauth-protected-resource", timeout=30)
    assert metadata.status_code == 200
    assert metadata.json()["resource"] == RESOURCE
    # Exactly as configured: clients compare the issuer as a string (RFC 8414).
    assert metadata.json()["authorization_servers"] == [issuer.url]
    assert metadata.json()["scopes_supported"] == [SCOPE]
    anonymous = httpx.get(f"{served.url}/v1/tasks", timeout=30)
    assert anonymous.status_code == 401
    challenge = anonymous.headers["www-authenticate"]
    assert 'resource_metadata="https://bench.example.org/.well-known/oauth-protected-resource"' in challenge
    assert "invalid_token" not in challenge


async def test_a_valid_token_acts_as_its_tenant_over_rest_and_mcp(served: LiveServer, issuer: Issuer):
    async with httpx.AsyncClient(timeout=60) as http:
        usage = await http.get(f"{served.url}/v1/usage", headers=_bearer(issuer.token()))
        created = await http.post(f"{served.url}/v1/episodes", json={"task_id": CHEST_PAIN},
                                  headers=_bearer(issuer.token()))
        assert usage.status_code == 200 and usage.json()["tenant"] == "alice"
        assert created.status_code == 201, created.text
        episode = created.json()
        by_key = await http.get(f"{served.url}/v1/episodes/{episode['episode_id']}",
                                headers={"Authorization": f"Bearer {API_KEYS['alice']}"})
        assert by_key.status_code == 200, "the API key of the same tenant sees it"
        bobs = await http.post(episode["mcp_url"], headers=_bearer(issuer.token(sub="bob")),
                               json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert bobs.status_code == 404
    async with mcp_session(episode["mcp_url"], issuer.token()) as client:
        result = await client.call_tool("get_patient", {"patient_id": "P2"})
    assert not result.is_error
    async with mcp_session(episode["mcp_url"], episode["token"]) as client:  # the episode token still works
        assert not (await client.call_tool("list_patients", {})).is_error


@pytest.mark.parametrize(("claims", "why"), [
    ({"exp": int(time.time()) - 60}, "expired"),
    ({"aud": "https://other.example.org/"}, "another resource"),
    ({"iss": "https://evil.example.org"}, "another issuer"),
    ({"signing_key": rsa.generate_private_key(public_exponent=65537, key_size=2048)}, "a key not in the JWKS"),
    ({"sub": None}, "no tenant claim"),
])
def test_tokens_that_are_not_for_this_resource_get_401(served: LiveServer, issuer: Issuer, claims, why):
    refused = httpx.get(f"{served.url}/v1/tasks", headers=_bearer(issuer.token(**claims)), timeout=30)
    assert refused.status_code == 401, why
    assert 'error="invalid_token"' in refused.headers["www-authenticate"]
    assert "resource_metadata=" in refused.headers["www-authenticate"]


async def test_a_tenant_known_only_by_its_tokens_has_its_own_limits(served: LiveServer, issuer: Issuer):
    async with httpx.AsyncClient(timeout=60) as http:
        first, second = [await http.post(f"{served.url}/v1/episodes", json={"task_id": CHEST_PAIN},
                                         headers=_bearer(issuer.token(sub="carol"))) for _ in range(2)]
        usage = await http.get(f"{served.url}/v1/usage", headers=_bearer(issuer.token(sub="carol")))
    assert first.status_code == 201 and second.status_code == 429
    assert usage.json()["tenant"] == "carol" and usage.json()["open_episodes"] == 1


def test_a_token_without_the_required_scope_gets_403(served: LiveServer, issuer: Issuer):
    refused = httpx.get(f"{served.url}/v1/tasks", headers=_bearer(issuer.token(scope="openid")), timeout=30)
    assert refused.status_code == 403 and refused.json()["type"] == "insufficient_scope"
    assert 'error="insufficient_scope"' in refused.headers["www-authenticate"]
    assert f'scope="{SCOPE}"' in refused.headers["www-authenticate"]
