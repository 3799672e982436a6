"""The request body size limit, enforced on the declared Content-Length and again while the body streams in.

Starlette's own limit answers a declared oversize body with plain text whatever the handlers say, so
the services use this one, which answers with the ErrorBody.
"""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ._errors import ApiError
from ._handlers import error_response


class BodyLimit:
    """Refuse bodies over `max_body_bytes` with 413; `setting` tells the user how to raise the limit."""

    def __init__(self, app: ASGIApp, *, max_body_bytes: int, setting: str) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        self.setting = setting

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if declares_too_much(Headers(scope=scope), self.max_body_bytes):
            await error_response(body_too_large(self.max_body_bytes, self.setting))(scope, receive, send)
            return
        started = False

        async def tracked_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited_receive(receive, self.max_body_bytes, self.setting), tracked_send)
        except ApiError as error:
            # Raised by the limited receive inside an app that has no handler for it (an MCP endpoint).
            if started or error.status_code != 413:
                raise
            await error_response(error)(scope, receive, send)


def body_too_large(max_body_bytes: int, setting: str) -> ApiError:
    """413 for a body over `max_body_bytes`; `setting` names what raises the limit."""
    return ApiError(413, "body_too_large",
                    f"the request body is larger than the limit of {max_body_bytes} bytes ({setting})")


def declares_too_much(headers: Headers, max_body_bytes: int) -> bool:
    """Whether the request's Content-Length is over `max_body_bytes`."""
    declared = headers.get("content-length")
    return declared is not None and declared.isdigit() and int(declared) > max_body_bytes


def limited_receive(receive: Receive, max_body_bytes: int, setting: str) -> Receive:
    """`receive` that raises `body_too_large` once the body's chunks add up to more than `max_body_bytes`."""
    received = 0

    async def limited() -> Message:
        nonlocal received
        message = await receive()
        if message["type"] == "http.request":
            received += len(message.get("body", b""))
            if received > max_body_bytes:
                raise body_too_large(max_body_bytes, setting)
        return message

    return limited
