"""Read deadlines for uvicorn connections: a client gets `header_seconds` to send a request's headers (from
connecting, or from the first byte of a request on a kept-alive connection, whose idle time uvicorn's
keep-alive bounds) and `body_seconds` more to send its body; past either, the connection is closed. Idle,
drip-fed (slowloris) and slow-body connections cannot hold a worker's sockets."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger("occusim.rest")


def read_deadline_protocol(*, header_seconds: float, body_seconds: float) -> type[H11Protocol]:
    """uvicorn's h11 protocol with the two deadlines, for `uvicorn.Config(http=...)`."""

    class ReadDeadlineProtocol(H11Protocol):
        _deadline: asyncio.TimerHandle | None = None
        _reading: str = "headers"

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._await("headers", header_seconds)

        def connection_lost(self, exc: Exception | None) -> None:
            self._clear()
            super().connection_lost(exc)

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            self._follow()

        def on_response_complete(self) -> None:
            self._clear()  # idle until the next request: uvicorn's keep-alive timeout applies
            super().on_response_complete()

        def _follow(self) -> None:
            """Move the deadline with the request being read: headers, then the body, then none."""
            if self.transport.is_closing():
                self._clear()
                return
            state = self.conn.their_state
            if state is h11.IDLE and self._reading != "headers":
                self._await("headers", header_seconds)
            elif state is h11.SEND_BODY and self._reading != "body":
                self._await("body", body_seconds)
            elif state not in (h11.IDLE, h11.SEND_BODY):
                self._clear()

        def _await(self, what: str, seconds: float) -> None:
            self._clear()
            self._reading = what
            self._deadline = self.loop.call_later(seconds, self._expired, what, seconds)

        def _clear(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None
            self._reading = ""

        def _expired(self, what: str, seconds: float) -> None:
            self._deadline = None
            if not self.transport.is_closing():
                client = f"{self.client[0]}:{self.client[1]}" if self.client else "a client"
                log.info("closed the connection of %s: no complete request %s within %.0f s", client, what, seconds)
                self.transport.close()

    return ReadDeadlineProtocol
