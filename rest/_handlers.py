"""Exception handlers that answer every error, ours and the framework's, with an ErrorBody."""

from __future__ import annotations

import http
import json
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Match

from occusim.environments import INCONSISTENT, format_location

from ._errors import ApiError, FieldError

_SHOWN_FIELD_ERRORS = 5
_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def error_response(error: ApiError) -> JSONResponse:
    return JSONResponse(error.body().model_dump(mode="json", exclude_none=True), status_code=error.status_code,
                        headers=error.headers)


async def _api_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, ApiError)
    return error_response(error)


async def _http_error(request: Request, error: Exception) -> Response:
    """The framework's own errors (no route, method not allowed, ...) in the same shape as ours."""
    assert isinstance(error, HTTPException)
    status = http.HTTPStatus(error.status_code)
    if error.status_code == 405:
        error.headers = {**(error.headers or {}), "Allow": _allowed_methods(request)}
    message = error.detail if error.detail != status.phrase else _framework_message(request, error)
    kind = {404: "not_found", 405: "method_not_allowed", 413: "body_too_large"}.get(
        error.status_code, status.phrase.lower().replace(" ", "_").replace("-", "_"))
    return error_response(ApiError(error.status_code, kind, message, headers=dict(error.headers or {})))


def _framework_message(request: Request, error: HTTPException) -> str:
    where = f"{request.method} {request.url.path}"
    if error.status_code == 404:
        return f"no route for {where}; the routes are listed in /openapi.json"
    if error.status_code == 405:
        allowed = (error.headers or {}).get("Allow", "")
        return f"{where} is not allowed; this path takes {allowed or 'no method'}"
    return f"{where}: {http.HTTPStatus(error.status_code).phrase}"


def _allowed_methods(request: Request) -> str:
    """Every method some route takes on this path; Starlette's 405 names only the first route's."""
    routes = request.app.router.routes
    allowed = [
        method for method in _METHODS
        if any(route.matches({**request.scope, "method": method})[0] == Match.FULL for route in routes)
    ]
    return ", ".join(allowed)


async def _invalid_request(request: Request, error: Exception) -> Response:
    """400 for a body that is not JSON, 415 for JSON sent as something else, 422 listing every bad field."""
    assert isinstance(error, RequestValidationError)
    details = error.errors()
    for detail in details:
        if detail["type"] == "json_invalid":
            problem = detail.get("ctx", {}).get("error", "malformed")
            return error_response(ApiError(
                400, "invalid_json", f"the request body is not JSON: {problem} (character {detail['loc'][-1]})"))
    if isinstance(error.body, bytes | bytearray):
        return error_response(_not_sent_as_json(request, bytes(error.body)))
    fields = [
        FieldError(field=_field(detail["loc"]), message=detail["msg"], type=detail["type"]) for detail in details
    ]
    shown = "; ".join(f"{field.field or 'body'}: {field.message}" for field in fields[:_SHOWN_FIELD_ERRORS])
    more = f" (and {len(fields) - _SHOWN_FIELD_ERRORS} more)" if len(fields) > _SHOWN_FIELD_ERRORS else ""
    if all(field.type == INCONSISTENT for field in fields):
        # The body satisfies its schema, but its parts contradict each other: a rule no schema can state.
        return error_response(ApiError(409, "inconsistent_body", f"the request body contradicts itself: {shown}{more}",
                                       errors=fields))
    return error_response(ApiError(422, "invalid_body", f"invalid request body: {shown}{more}", errors=fields))


def _not_sent_as_json(request: Request, body: bytes) -> ApiError:
    """A body the framework did not parse because its Content-Type is not JSON."""
    try:
        json.loads(body)
    except (ValueError, UnicodeDecodeError) as error:
        return ApiError(400, "invalid_json", f"the request body is not JSON: {error}")
    sent = request.headers.get("content-type", "none")
    return ApiError(415, "unsupported_media_type",
                    f"send the JSON body with 'Content-Type: application/json' (got {sent!r})")


def _field(location: tuple[Any, ...]) -> str:
    # A body field is named from the body's root; a path or header parameter keeps its source.
    return format_location(location[1:] if location[:1] == ("body",) else location)


EXCEPTION_HANDLERS: dict[int | type[Exception], Callable[[Request, Any], Coroutine[Any, Any, Response]]] = {
    ApiError: _api_error,
    HTTPException: _http_error,
    RequestValidationError: _invalid_request,
}
