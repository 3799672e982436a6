"""The MCP lane answers an episode's MCP endpoint exactly as the REST route it stands in front of: the same
requests sent to the service as built and to the same service without the lane (one store, one token
secret) get the same status, body and challenge; and the lane really is the way those requests take."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.middleware.cors import CORSMiddleware

from occusim.service._mcp_lane import McpLane
from tests.helpers import CHEST_PAIN, LiveServer, hosted_settings

MAX_BODY = 2048
MODERN = "2026-07-28"
COMPARED_HEADERS = ("content-type", "www-authenticate", "retry-after", "allow")


@contextlib.contextmanager
def lane_and_route(tmp_path) -> Iterator[tuple[LiveServer, LiveServer]]:
    """The service twice over one store: as built, and with the lane taken out (the REST route answers)."""
    chosen = hosted_settings(tmp_path, max_body_bytes=MAX_BODY)
    with_lane, without = LiveServer(chosen), LiveServer(chosen)
    without.app.user_middleware = [m for m in without.app.user_middleware if m.cls is not McpLane]
    assert len(without.app.user_middleware) == len(with_lane.app.user_middleware) - 1
    with with_lane, without:
        yield with_lane, without


def answered(response: httpx.Response) -> tuple[int, object, dict[str, str]]:
    try:
        body: object = response.json()
    except ValueError:
        body = response.text
    if isinstance(body, dict) and isinstance(body.get("result"), dict):
        body = {**body, "result": {k: v for k, v in body["result"].items() if k != "_meta"}}
    return response.status_code, body, {h: response.headers[h] for h in COMPARED_HEADERS if h in response.headers}


STREAMED = object()  # a body sent in chunks without a Content-Length, over the limit


def sent(body: object) -> object:
    """What httpx sends for a case's body: a fresh chunk iterator for STREAMED."""
    return iter([b"x" * 1500, b"x" * 1500]) if body is STREAMED else body


def rpc(method: str, params: dict | None = None, ident: int = 1) -> bytes:
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientInfo": {"name": "lane-test", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {}}
    return json.dumps({"jsonrpc": "2.0", "id": ident, "method": method,
                       "params": {**(params or {}), "_meta": meta}}).encode()


def test_the_lane_and_the_route_answer_alike_and_the_lane_is_taken(tmp_path, monkeypatch):
    through_cors = []
    original = CORSMiddleware.__call__

    async def counted(self, scope, receive, send):
        if scope["type"] == "http":
            through_cors.append(scope["path"])
        await original(self, scope, receive, send)

    monkeypatch.setattr(CORSMiddleware, "__call__", counted)
    with lane_and_route(tmp_path) as (lane, route), httpx.Client(timeout=60) as http:
        created = http.post(f"{lane.url}/v1/episodes", json={"task_id": CHEST_PAIN}, headers=lane.headers()).json()
        other = http.post(f"{lane.url}/v1/episodes", json={"task_id": CHEST_PAIN}, headers=lane.headers()).json()
        path = created["mcp_url"].removeprefix(lane.url)
        token = {"Authorization": f"Bearer {created['token']}"}
        modern = {**token, "Accept": "application/json, text/event-stream", "Content-Type": "application/json",
                  "MCP-Protocol-Version": MODERN}
        call = rpc("tools/call", {"name": "get_patient", "arguments": {"patient_id": "P2"}})
        listing = {**modern, "Mcp-Method": "tools/list"}
        modern = {**modern, "Mcp-Method": "tools/call", "Mcp-Name": "get_patient"}
        cases = [
            ("POST", path, {}, call),  # no credential
            ("POST", path, {**modern, "Authorization": "Bearer ept_wrong"}, call),
            ("POST", path, {**modern, "Authorization": f"Basic {created['token']}"}, call),
            ("POST", path, {**modern, "Authorization": f"Bearer {other['token']}"}, call),  # another episode's
            ("POST", "/v1/episodes/ep-none/mcp", modern, call),
            ("POST", path, {**modern, "MCP-Protocol-Version": "1999-01-01"}, call),
            ("POST", path, modern, b"x" * (MAX_BODY + 1)),  # declared too large
            ("POST", path, modern, STREAMED),  # too large, streamed without a length
            ("POST", path, modern, b"{not json"),
            ("POST", path, listing, rpc("tools/list")),
            ("POST", path + "/", listing, rpc("tools/list")),
            ("POST", path, modern, call),
            ("POST", path, {**modern, "Authorization": f"bearer {created['token']}"}, call),
            ("GET", path, modern, None),
            ("DELETE", path, modern, None),
            ("PUT", path, modern, call),  # not the lane's: both answer as the REST stack does
        ]
        from_lane = []
        for method, where, headers, body in cases:
            answers = [answered(http.request(method, server.url + where, headers=headers, content=sent(body)))
                       for server in (lane, route)]
            assert answers[0] == answers[1], (method, where, headers.get("Authorization"))
            from_lane.append(answers[0][0])
        assert from_lane[:8] == [401, 401, 401, 401, 401, 400, 413, 413]
        assert from_lane[9:13] == [200, 200, 200, 200]

        through_cors.clear()
        assert http.post(lane.url + path, headers=listing, content=rpc("tools/list")).status_code == 200
        assert through_cors == []  # the lane answered
        browser = {**listing, "Origin": "http://localhost:6274"}
        from_browser = http.post(lane.url + path, headers=browser, content=rpc("tools/list"))
        assert from_browser.status_code == 200 and through_cors == [path]  # the REST stack, for its CORS headers
        assert from_browser.headers["access-control-allow-origin"] == "http://localhost:6274"


_IDS = st.sampled_from(["ep-none", "..", "%2e%2e", "a b", "ep%2Fx", "x" * 300, ""])
_AUTHS = st.sampled_from([None, "Bearer", "bearer ept_x", "Basic abc", "Bearer  ept_x", "ept_x"])
_VERSIONS = st.sampled_from([None, MODERN, "2025-11-25", "1999-01-01", "", "2026-07-28,2025-11-25"])


@pytest.fixture(scope="module")
def shared_pair(tmp_path_factory) -> Iterator[tuple[str, str]]:
    """One pair of servers for the generated requests (starting two per example would take minutes)."""
    with lane_and_route(tmp_path_factory.mktemp("lane")) as (lane, route):
        yield lane.url, route.url


@settings(max_examples=60, deadline=None)
@given(method=st.sampled_from(["POST", "GET", "DELETE", "PATCH"]), episode=_IDS, tail=st.sampled_from(["", "/", "//"]),
       auth=_AUTHS, version=_VERSIONS, body=st.one_of(st.none(), st.binary(max_size=64),
                                                      st.just(b"y" * (MAX_BODY + 10))))
def test_any_request_near_the_endpoint_gets_the_routes_answer(shared_pair, method, episode, tail, auth, version,
                                                              body):
    headers = {k: v for k, v in (("Authorization", auth), ("MCP-Protocol-Version", version)) if v is not None}
    with httpx.Client(timeout=60) as http:
        answers = [answered(http.request(method, f"{url}/v1/episodes/{episode}/mcp{tail}", headers=headers,
                                         content=body)) for url in shared_pair]
    assert answers[0] == answers[1]
