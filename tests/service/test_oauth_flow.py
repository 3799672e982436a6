"""The whole MCP authorization flow against a real authorization server (npm `oidc-provider` on loopback,
installed under .cache like the MCP Inspector) with the SDK's own OAuth client: discovery, dynamic
registration, authorization code with PKCE through the server's login and consent pages, token, tool call,
and a refresh once the access token expires."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urljoin, urlparse

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)

from tests.helpers import CHEST_PAIN, LiveServer, free_port, hosted_settings

REPO = Path(__file__).resolve().parents[2]
PROVIDER = REPO / ".cache" / "oidc-provider" / "node_modules" / "oidc-provider" / "lib" / "index.js"
ISSUER_SCRIPT = Path(__file__).with_name("oauth_issuer.mjs")
SCOPE = "occusim:episodes"
REDIRECT = "http://127.0.0.1:9/callback"  # never reached: the test reads the code from the redirect
TOKEN_SECONDS = 4

if not (shutil.which("node") and PROVIDER.is_file()):
    reason = "needs Node and oidc-provider: run `make oidc-provider`"
    if os.environ.get("CI") == "true":
        raise RuntimeError(reason)
    pytest.skip(reason, allow_module_level=True)


@pytest.fixture(scope="module")
def authorization_server() -> Iterator[tuple[str, str]]:
    """The issuer URL and the resource URI (this test's service) it issues tokens for."""
    port, service_port = free_port(), free_port()
    resource = f"http://127.0.0.1:{service_port}/"
    process = subprocess.Popen(
        ["node", str(ISSUER_SCRIPT), str(port), resource, SCOPE, str(TOKEN_SECONDS)],
        env={**os.environ, "OIDC_PROVIDER": str(PROVIDER)}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    assert process.stdout is not None
    said = ""
    while "ready" not in said:  # after its development-mode warnings
        line = process.stdout.readline().decode()
        if not line:
            raise RuntimeError(f"oidc-provider did not start: {said[-2000:]}")
        said += line
    threading.Thread(target=process.stdout.read, daemon=True).start()  # keep its pipe drained
    try:
        yield f"http://127.0.0.1:{port}", resource
    finally:
        process.terminate()
        process.wait(timeout=10)


class _Memory:
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class _Person:
    """Signs in as `login` on the authorization server's development pages and consents, over plain HTTP."""

    def __init__(self, login: str) -> None:
        self.login = login
        self.result: AuthorizationCodeResult | None = None
        self.pages: list[str] = []

    async def open(self, url: str) -> None:
        async with httpx.AsyncClient(timeout=30) as browser:
            response = await browser.get(url)
            for _ in range(12):
                location = response.headers.get("location")
                if location is not None:
                    target = urljoin(str(response.url), location)
                    if target.startswith(REDIRECT):
                        query = parse_qs(urlparse(target).query)
                        assert "error" not in query, query
                        self.result = AuthorizationCodeResult(code=query["code"][0], state=query.get("state", [None])[0],
                                                              iss=query.get("iss", [None])[0])
                        return
                    response = await browser.get(target)
                    continue
                page = response.text
                form = re.search(r'<form[^>]*action="([^"]+)"', page)
                assert form is not None, page[:2000]
                prompt = re.search(r'name="prompt" value="([^"]+)"', page)
                self.pages.append(prompt.group(1) if prompt else "?")
                fields = {"prompt": prompt.group(1) if prompt else "login"}
                if fields["prompt"] == "login":
                    fields |= {"login": self.login, "password": "any"}
                response = await browser.post(urljoin(str(response.url), form.group(1)), data=fields)
        raise AssertionError(f"no redirect to the client after {self.pages}")

    async def callback(self) -> AuthorizationCodeResult:
        assert self.result is not None
        return self.result


async def test_a_connector_signs_in_calls_a_tool_and_refreshes(authorization_server, tmp_path):
    issuer, resource = authorization_server
    port = int(urlparse(resource).port or 0)
    settings = hosted_settings(tmp_path, oauth_issuer=issuer, oauth_resource=resource, oauth_scopes=[SCOPE])
    with LiveServer(settings, port=port) as server:
        async with httpx.AsyncClient(timeout=60) as http:
            created = (await http.post(f"{server.url}/v1/episodes", json={"task_id": CHEST_PAIN},
                                       headers=server.headers("alice"))).json()
        person, storage = _Person("alice"), _Memory()
        auth = OAuthClientProvider(
            server_url=created["mcp_url"], storage=storage, redirect_handler=person.open,
            callback_handler=person.callback,
            client_metadata=OAuthClientMetadata(
                client_name="occusim test connector", redirect_uris=[REDIRECT], token_endpoint_auth_method="none",
                grant_types=["authorization_code", "refresh_token"], scope=f"{SCOPE} offline_access",
            ),
        )
        async with httpx2.AsyncClient(auth=auth, timeout=httpx2.Timeout(60)) as http2:
            async with Client(streamable_http_client(created["mcp_url"], http_client=http2)) as client:
                first = await client.call_tool("get_patient", {"patient_id": "P2"})
                signed_in = storage.tokens
                await asyncio.sleep(TOKEN_SECONDS + 1)
                second = await client.call_tool("list_patients", {})
        refreshed = storage.tokens
        async with httpx.AsyncClient(timeout=60) as http:
            usage = await http.get(f"{server.url}/v1/usage", headers={"Authorization": f"Bearer {refreshed.access_token}"})
    assert person.pages[:2] == ["login", "consent"], person.pages
    assert storage.client is not None and storage.client.client_id, "registered itself"
    assert not first.is_error and not second.is_error
    assert signed_in is not None and refreshed is not None and refreshed.access_token != signed_in.access_token
    assert signed_in.refresh_token, "a refresh token was issued and used"
    assert usage.status_code == 200 and usage.json()["tenant"] == "alice"


def test_the_issuer_metadata_lists_its_keys(authorization_server):
    issuer, _ = authorization_server
    deadline = time.monotonic() + 10
    while True:
        try:
            found = httpx.get(f"{issuer}/.well-known/openid-configuration", timeout=5).json()
            break
        except httpx.TransportError:
            assert time.monotonic() < deadline
            time.sleep(0.2)
    assert found["issuer"] == issuer and found["jwks_uri"].startswith(issuer)
