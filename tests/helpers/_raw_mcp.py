"""Raw handshake-era MCP requests to an episode, each sent to the replica the caller names: what a proxy
without stickiness does to a session."""

from __future__ import annotations

from typing import Any

import httpx

SESSION_HEADER = "Mcp-Session-Id"


def rpc(method: str, params: dict[str, Any] | None = None, id: int | None = 1) -> dict[str, Any]:
    """A JSON-RPC request (a notification with id=None)."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    if id is not None:
        message["id"] = id
    return message


class RawSession:
    """One episode's MCP endpoint on several replicas (`urls`), spoken to in plain HTTP."""

    def __init__(self, http: httpx.AsyncClient, urls: list[str], created: dict[str, Any]) -> None:
        self.http, self.urls, self.created = http, urls, created
        self.path = created["mcp_url"].split("/v1/", 1)[1]
        self.session: str | None = None
        self.version: str | None = None

    async def send(self, replica: int, method: str = "POST", body: dict[str, Any] | None = None) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.created['token']}",
                   "Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        if self.session:
            headers[SESSION_HEADER] = self.session
        if self.version:
            headers["MCP-Protocol-Version"] = self.version
        return await self.http.request(method, f"{self.urls[replica]}/v1/{self.path}", json=body, headers=headers)

    async def open(self, replica: int, version: str) -> httpx.Response:
        """initialize (asking for `version`) and notifications/initialized; keeps the session id."""
        opened = await self.send(replica, body=rpc("initialize", {
            "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}))
        if opened.status_code == 200:
            self.session = opened.headers[SESSION_HEADER]
            await self.send(replica, body=rpc("notifications/initialized", id=None))
        return opened

    async def call(self, replica: int, tool: str, arguments: dict[str, Any], id: int = 1) -> httpx.Response:
        return await self.send(replica, body=rpc("tools/call", {"name": tool, "arguments": arguments}, id=id))
