"""The viewer's pages in the hosted service: each tenant sees only its own episodes, with its API key or a
short-lived signed link (checked in headless Chromium too); links expire and cannot be forged."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from occusim.service import ViewerLinkResponse
from occusim.service._auth import EpisodeTokens, ViewerLinks
from tests.helpers import CHEST_PAIN, Browser, LiveServer, hosted_settings, mcp_session

KEY = b"k" * 32


def _ids(page: str) -> list[str]:
    return re.findall(r'<a href="/v1/view/episodes/([^"]+)">', page)


@pytest.fixture
async def served(tmp_path: Path):
    """The hosted service with one episode of alice's (one real tool call) and one of bob's."""
    with LiveServer(hosted_settings(tmp_path)) as server:
        async with httpx.AsyncClient(timeout=60) as http:
            ids = {}
            for tenant in ("alice", "bob"):
                created = (await http.post(f"{server.url}/v1/episodes", json={"task_id": CHEST_PAIN},
                                           headers=server.headers(tenant))).json()
                ids[tenant] = created["episode_id"]
                if tenant == "alice":
                    async with mcp_session(created["mcp_url"], created["token"]) as client:
                        await client.call_tool("get_patient", {"patient_id": "P1"})
        yield server, ids


async def test_a_tenant_sees_only_its_own_episodes_with_its_api_key(served):
    server, ids = served
    async with httpx.AsyncClient(timeout=60) as http:
        index = await http.get(f"{server.url}/v1/view/", headers=server.headers("alice"))
        own = await http.get(f"{server.url}/v1/view/episodes/{ids['alice']}", headers=server.headers("alice"))
        other = await http.get(f"{server.url}/v1/view/episodes/{ids['bob']}", headers=server.headers("alice"))
        anonymous = await http.get(f"{server.url}/v1/view/")
        wrong = await http.get(f"{server.url}/v1/view/", headers={"Authorization": "Bearer nope"})
        css = await http.get(f"{server.url}/v1/view/static/viewer.css")

    assert index.status_code == 200 and _ids(index.text) == [ids["alice"]]
    assert "episodes of alice" in index.text and 'href="/v1/view/static/viewer.css"' in index.text
    assert own.status_code == 200 and "get_patient" in own.text and "Ana Ruiz" in own.text
    assert other.status_code == 404
    assert anonymous.status_code == wrong.status_code == 401
    assert anonymous.headers["WWW-Authenticate"].startswith("Bearer")
    assert css.status_code == 200


async def test_a_signed_link_opens_the_pages_without_the_key(served, tmp_path: Path, chromium: str):
    server, ids = served
    async with httpx.AsyncClient(timeout=60) as http:
        made = await http.post(f"{server.url}/v1/viewer-links", json={"episode_id": ids["alice"]},
                               headers=server.headers("alice"))
        refused = await http.post(f"{server.url}/v1/viewer-links", json={"episode_id": ids["bob"]},
                                  headers=server.headers("alice"))
        unauthenticated = await http.post(f"{server.url}/v1/viewer-links", json={})
    assert made.status_code == 201, made.text
    link = ViewerLinkResponse.model_validate(made.json())
    assert link.url.startswith(f"{server.url}/v1/view/open?access=")
    assert refused.status_code == 404 and unauthenticated.status_code == 401

    async with httpx.AsyncClient(timeout=60, follow_redirects=True) as browser_like:
        opened = await browser_like.get(link.url)
        index = await browser_like.get(f"{server.url}/v1/view/")
        bobs = await browser_like.get(f"{server.url}/v1/view/episodes/{ids['bob']}")
    assert opened.status_code == 200 and str(opened.url).endswith(f"/v1/view/episodes/{ids['alice']}")
    assert _ids(index.text) == [ids["alice"]] and bobs.status_code == 404
    cookie = opened.history[0].headers["set-cookie"]
    assert "HttpOnly" in cookie and "Path=/v1/view" in cookie and "SameSite=lax" in cookie

    forged = link.url.replace("access=", "access=x")
    async with httpx.AsyncClient(timeout=60) as http:
        assert (await http.get(forged)).status_code == 401

    with Browser(chromium, tmp_path / "profile") as page:
        page.goto(link.url)
        assert page.evaluate("location.pathname") == f"/v1/view/episodes/{ids['alice']}"
        page.act_and_wait("document.querySelector('a.home').click()")
        assert page.evaluate("Array.from(document.querySelectorAll('td.id a')).map(a => a.textContent)") \
            == [ids["alice"]]
        page.screenshot(tmp_path / "hosted-index.png")


def test_the_pages_are_not_in_the_api_document(served):
    server, _ids_ = served
    paths = httpx.get(f"{server.url}/openapi.json", timeout=60).json()["paths"]
    assert "/v1/viewer-links" in paths
    assert not any(path.startswith("/v1/view/") for path in paths)


def test_links_expire_and_cannot_be_forged_or_reused_as_episode_tokens():
    now = [1_000_000.0]
    links = ViewerLinks(KEY, clock=lambda: now[0])
    token, expires_at = links.issue("alice", 60)

    grant = links.verify(token)
    assert grant is not None and grant.tenant == "alice" and expires_at == 1_000_060
    payload, signature = token.split(".")
    assert links.verify(f"{payload}.{signature[:-2]}AA") is None
    assert ViewerLinks(b"other-key-0123456789").verify(token) is None
    assert links.verify(None) is None and links.verify("") is None and links.verify("a.b.c") is None
    assert not EpisodeTokens(KEY).verify(payload, signature)  # a link's signature is no episode token
    now[0] += 60
    assert links.verify(token) is None


async def test_a_link_without_a_tenant_or_of_an_unknown_tenant_opens_nothing_on_an_authenticated_instance(served):
    # What an instance without API keys (or with other tenants) sharing the token secret would mint.
    server, ids = served
    links = ViewerLinks(server.settings.token_key())
    async with httpx.AsyncClient(timeout=60) as http:
        for tenant in (None, "carol"):
            token, _ = links.issue(tenant, 600)
            opened = await http.get(f"{server.url}/v1/view/open", params={"access": token})
            index = await http.get(f"{server.url}/v1/view/", headers={"Cookie": f"occusim_view={token}"})
            episode = await http.get(f"{server.url}/v1/view/episodes/{ids['bob']}", headers={"Cookie": f"occusim_view={token}"})
            assert opened.status_code == index.status_code == episode.status_code == 401, tenant
            assert ids["alice"] not in index.text and ids["bob"] not in index.text
        alices, _ = links.issue("alice", 600)
        own = await http.get(f"{server.url}/v1/view/", headers={"Cookie": f"occusim_view={alices}"})
    assert own.status_code == 200 and _ids(own.text) == [ids["alice"]]
