"""The episode's MCP tools forwarded to the agent: one shared tool server proxies every rollout to its own
episode's endpoint, with that episode's token (verifiers' pattern for remote tool servers)."""

from __future__ import annotations

from typing import Any, cast

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult, Tool
from verifiers.v1.harnesses.utils.mcp import mcp_client
from verifiers.v1.mcp import SharedToolsetConfig, Toolset
from verifiers.v1.state import State

SUBMIT = "submit_result"


class OccusimState(State):
    """One rollout's episode, shared by the task's hooks and the tool server."""

    service_url: str = ""
    episode_id: str = ""
    mcp_url: str = ""
    token: str = ""
    request_timeout: float = 300.0
    submitted: bool = False
    """submit_result was accepted: the episode is closed and being judged."""

    def mcp_spec(self) -> dict[str, Any]:
        if not self.mcp_url:
            raise RuntimeError("no occusim episode is open for this rollout (the task's setup did not run)")
        return {
            "url": self.mcp_url,
            "headers": {"Authorization": f"Bearer {self.token}"},
            "timeout": self.request_timeout,
            "connect_timeout": self.request_timeout,
        }


class OccusimToolset(Toolset[SharedToolsetConfig, OccusimState]):
    """The scenario's tools and submit_result, under their own names, as the episode lists them."""

    TOOL_PREFIX = None

    def register(self, mcp: MCPServer) -> None:
        # The tool list is the rollout's episode's, known only per call: the server's handlers are replaced, as
        # verifiers' own bridges to remote tool servers do.
        server = cast(Any, mcp)
        server.list_tools = self._with_state(self.list_tools)
        server.call_tool = self._with_state(self.call_tool)

    async def list_tools(self) -> list[Tool]:
        async with mcp_client(self.state.mcp_spec()) as client:
            return list((await client.list_tools()).tools)

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context | None = None
    ) -> CallToolResult:
        async with mcp_client(self.state.mcp_spec()) as client:
            result = await client.call_tool(name, arguments)
        if name == SUBMIT and not result.is_error:
            self.state.submitted = True
        return result


if __name__ == "__main__":
    OccusimToolset.run()
