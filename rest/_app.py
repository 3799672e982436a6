"""Assembling a service: a FastAPI app with the shared error handling, body limit and documented errors."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastapi import APIRouter, FastAPI
from fastapi.routing import APIRoute
from starlette.middleware import Middleware
from starlette.types import Lifespan

from occusim import __version__

from ._body_limit import BodyLimit
from ._errors import ErrorBody
from ._handlers import EXCEPTION_HANDLERS
from ._json_body import MAX_BODY_DEPTH, JsonBodyRoute
from ._text_rule import state_text_rule

_ERROR_TEXT = {
    400: "The body is not JSON, or holds what no record can (NUL, lone surrogates, nesting over 128 levels)",
    401: "Missing or wrong credentials", 403: "Not offered to this API key", 404: "Not found",
    409: "Conflict: the state of what the request names forbids it, or the body's parts contradict each other",
    413: "Body too large", 415: "The body is not sent as application/json", 422: "Invalid request",
    429: "A limit of the tenant was reached; retry after the Retry-After header's seconds",
    502: "A model could not be reached", 503: "Unavailable for now; retry after the Retry-After header's seconds",
}
BODY_ERRORS = (400, 413, 415, 422)


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The `responses` of an operation for these error statuses, all documented as ErrorBody."""
    return {
        status: {"model": ErrorBody, "description": _ERROR_TEXT.get(status, "Error")} for status in sorted(statuses)
    }


def rest_app(
    *, title: str, description: str, routers: Sequence[APIRouter], max_body_bytes: int, body_limit_setting: str,
    middleware: Sequence[Middleware] = (), lifespan: Lifespan[Any] | None = None,
    max_body_depth: int = MAX_BODY_DEPTH,
) -> FastAPI:
    """A FastAPI app whose every error is an ErrorBody and whose OpenAPI document is at /openapi.json.

    `middleware` runs outside the body limit (a Host check, say); `body_limit_setting` names the setting
    that raises the limit, for the 413 message. Every route that reads a body must be a JsonBodyRoute
    (`APIRouter(route_class=JsonBodyRoute)`), which refuses bodies nested deeper than `max_body_depth`.
    """
    app = FastAPI(
        title=title, description=description, version=__version__, lifespan=lifespan,
        docs_url=None, redoc_url=None,
        # One schema per model, the one requests are validated with, as the models are shared both ways.
        separate_input_output_schemas=False,
        generate_unique_id_function=lambda route: route.name,
        # A body without Content-Type is read as JSON, as curl-like clients send it.
        strict_content_type=False,
        exception_handlers=dict(EXCEPTION_HANDLERS),
        middleware=[*middleware, Middleware(BodyLimit, max_body_bytes=max_body_bytes, setting=body_limit_setting)],
    )
    app.state.max_body_depth = max_body_depth
    for router in routers:
        app.include_router(router)
    unchecked = [route.path for route in app.routes
                 if isinstance(route, APIRoute) and route.body_field is not None
                 and not isinstance(route, JsonBodyRoute)]
    if unchecked:
        raise TypeError(f"routes {unchecked} read a body unchecked; build their router with route_class=JsonBodyRoute")
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        # The document FastAPI generates from the models, with the rule every body is checked against.
        if app.openapi_schema is None:
            app.openapi_schema = state_text_rule(generate())
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app
