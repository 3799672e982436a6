"""JSON request bodies read with limits: a body nested too deep, with lone surrogates or NUL in its text, or
with numbers that are not finite or too long is a 400 before any route or model sees it."""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from typing import Any

import anyio.to_thread
from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import Response

from occusim.environments import JsonInputError, json_problems

from ._errors import ApiError, FieldError

# Room for a body's own fields around the values it carries (an episode record's arguments, a state).
MAX_BODY_DEPTH = 128
_INLINE_BYTES = 64 * 1024


class JsonBodyRoute(APIRoute):
    """The route class of every REST router: its JSON body is parsed and checked by `_CheckedRequest`."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def checked(request: Request) -> Response:
            return await handler(_CheckedRequest(request.scope, request.receive))

        return checked


class _CheckedRequest(Request):
    """A request whose `json()`, which FastAPI reads the body with, refuses what no record can hold."""

    async def json(self) -> Any:
        if not hasattr(self, "_json"):
            body = await self.body()
            max_depth = getattr(self.app.state, "max_body_depth", MAX_BODY_DEPTH)
            # A large body takes tens of milliseconds to read and check: off the event loop.
            inline = len(body) <= _INLINE_BYTES
            self._json = _read(body, max_depth) if inline else await anyio.to_thread.run_sync(_read, body, max_depth)
        return self._json


def _read(body: bytes, max_depth: int) -> Any:
    try:
        value = json.loads(body)
    except json.JSONDecodeError:
        raise  # FastAPI answers it as invalid JSON, with the position
    except RecursionError:
        raise _refused([("", f"nested deeper than the limit of {max_depth} levels")]) from None
    except UnicodeDecodeError as error:
        raise ApiError(400, "invalid_json", f"the request body is not UTF-8 text: {error}") from None
    except ValueError:  # Python reads no integer of more than 4300 digits
        raise _refused([("", "holds a number too long to read")]) from None
    problems = json_problems(value, max_depth=max_depth)
    if problems:
        raise _refused(problems)
    return value


def _refused(problems: list[tuple[str, str]]) -> ApiError:
    fields = [FieldError(field=path, message=message, type="invalid_json_value") for path, message in problems]
    error = JsonInputError("the request body", problems)
    return ApiError(400, "invalid_json", str(error), errors=fields)
