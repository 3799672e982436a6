"""Standard input for the stdio transport, read so that cancelling the server (Ctrl+C) never waits for a line."""

from __future__ import annotations

import sys
from io import TextIOWrapper
from typing import AnyStr

import anyio
from anyio import to_thread


class InterruptibleFile(anyio.AsyncFile[AnyStr]):
    """An AsyncFile whose line reads are abandoned when cancelled: the blocked read stays in its worker thread,
    which ends with the process, instead of holding the server's shutdown until the client sends a line."""

    async def readline(self) -> AnyStr:
        return await to_thread.run_sync(self.wrapped.readline, abandon_on_cancel=True)


def interruptible_stdin() -> InterruptibleFile[str]:
    """The process's stdin as UTF-8 text lines (undecodable bytes replaced, as the MCP SDK reads them)."""
    # closefd=False: an abandoned read may still hold the descriptor when the server has returned.
    raw = open(sys.stdin.fileno(), "rb", closefd=False)  # noqa: SIM115 - owned by the transport
    return InterruptibleFile(TextIOWrapper(raw, encoding="utf-8", errors="replace"))
