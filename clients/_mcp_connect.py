"""Connect the official MCP client to an occusim server: in-process, a stdio command, or an HTTP URL."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.server.lowlevel import Server

McpTarget = Server[Any] | StdioServerParameters | Sequence[str] | str


def stdio_command(command: Sequence[str], *, env: dict[str, str] | None = None,
                  cwd: str | Path | None = None) -> StdioServerParameters:
    """A stdio server launched as `command`; it inherits this process's environment, updated with `env`.

    The whole environment is passed on (not only the SDK's safe default set) so that the server sees the
    same OCCUSIM_* settings and provider keys as the client that starts it.
    """
    if not command:
        raise ValueError("a stdio MCP server needs a command to run, e.g. ['occusim', 'serve', 'TASK_ID']")
    return StdioServerParameters(
        command=command[0], args=list(command[1:]), env={**os.environ, **(env or {})}, cwd=cwd
    )


@asynccontextmanager
async def connect(target: McpTarget, *, token: str | None = None,
                  read_timeout_seconds: float | None = None) -> AsyncIterator[Client]:
    """An entered MCP `Client` for `target`.

    `target` is an in-process low-level `Server`, `StdioServerParameters` or a command line (stdio), or an
    `http(s)://` URL (streamable HTTP, sending `token` as `Authorization: Bearer`). An error raised
    inside the block comes out as itself, not wrapped in the SDK's exception groups.
    """
    if isinstance(target, str) and not target.startswith(("http://", "https://")):
        raise ValueError(f"MCP URL {target!r} must start with http:// or https://")
    if token is not None and not isinstance(target, str):
        raise ValueError("a bearer token only applies to an HTTP MCP URL")
    try:
        async with AsyncExitStack() as stack:
            if isinstance(target, str):
                server: Any = await _http_transport(stack, target, token)
            elif isinstance(target, Server | StdioServerParameters):
                server = target
            else:
                server = stdio_command(list(target))
            client = Client(server, read_timeout_seconds=read_timeout_seconds)
            yield await stack.enter_async_context(client)
    except BaseExceptionGroup as group:
        # The SDK's task groups wrap whatever the caller raised; hand a lone error back as itself.
        single = _sole_exception(group)
        if single is None:
            raise
        raise single from single.__cause__


def _sole_exception(group: BaseExceptionGroup) -> Exception | None:
    while len(group.exceptions) == 1:
        inner = group.exceptions[0]
        if not isinstance(inner, BaseExceptionGroup):
            return inner if isinstance(inner, Exception) else None
        group = inner
    return None


async def _http_transport(stack: AsyncExitStack, url: str, token: str | None) -> Any:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else None
    # The SDK's defaults: a long read timeout, because a server may hold a response stream open.
    timeout = httpx2.Timeout(30.0, read=300.0)
    http_client = await stack.enter_async_context(httpx2.AsyncClient(headers=headers, timeout=timeout))
    return streamable_http_client(url, http_client=http_client)
