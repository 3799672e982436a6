"""What every REST route of the hosted service shares: typed operations, body parsing, errors, auth."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from occusim.environments import Catalog, format_location

from ._auth import ApiKeys, EpisodeTokens
from ._config import ServiceSettings
from ._episodes import EpisodeService
from ._judging import BackgroundJudging

if TYPE_CHECKING:
    from ._mcp_http import EpisodeEndpoints

ModelT = TypeVar("ModelT", bound=BaseModel)
Auth = Literal["api_key", "episode_token", "none"]


@dataclass
class Hosted:
    """The running service as its routes see it."""

    settings: ServiceSettings
    catalog: Catalog
    service: EpisodeService
    api_keys: ApiKeys | None  # None: auth is off (loopback only)
    tokens: EpisodeTokens
    judging: BackgroundJudging
    endpoints: EpisodeEndpoints

    def tenant(self, request: Request) -> str | None:
        """The caller's tenant from its API key; None when the service runs without auth."""
        if self.api_keys is None:
            return None
        tenant = self.api_keys.tenant(request.headers.get("authorization"))
        if tenant is None:
            raise unauthorized("missing or unknown API key: send it as 'Authorization: Bearer <key>'")
        return tenant


class ApiError(Exception):
    """An error answered as `{"error": message, "type": kind}` with an HTTP status."""

    def __init__(
        self, status: int, kind: str, message: str, *, errors: list[dict[str, Any]] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.kind, self.message, self.errors, self.headers = status, kind, message, errors, headers


def error_response(error: ApiError) -> JSONResponse:
    body: dict[str, Any] = {"error": error.message, "type": error.kind}
    if error.errors is not None:
        body["errors"] = error.errors
    return JSONResponse(body, status_code=error.status, headers=error.headers)


async def handle_api_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, ApiError)
    return error_response(error)


def unauthorized(message: str) -> ApiError:
    return ApiError(401, "unauthorized", message, headers={"WWW-Authenticate": 'Bearer realm="occusim"'})


async def read_model(request: Request, model: type[ModelT]) -> ModelT:
    """Parse the JSON body into `model`: 400 when it is not JSON, 422 listing every invalid field."""
    body = await request.body()
    try:
        data = json.loads(body or b"null")
    except (ValueError, UnicodeDecodeError) as error:
        raise ApiError(400, "invalid_json", f"the request body is not JSON: {error}") from None
    try:
        return model.model_validate(data)
    except ValidationError as error:
        errors = [
            {"field": format_location(detail["loc"]), "message": detail["msg"], "type": detail["type"]}
            for detail in error.errors(include_url=False, include_context=False, include_input=False)
        ]
        shown = "; ".join(f"{e['field'] or 'body'}: {e['message']}" for e in errors)
        raise ApiError(422, "invalid_body", f"invalid request body: {shown}", errors=errors) from None


def model_response(model: BaseModel, status: int = 200) -> JSONResponse:
    return JSONResponse(model.model_dump(mode="json"), status_code=status)


@dataclass(frozen=True)
class Operation:
    """One documented HTTP operation; the OpenAPI document is generated from these and the models."""

    method: str
    path: str
    summary: str
    response: type[BaseModel] | None
    request: type[BaseModel] | None = None
    status: int = 200
    errors: tuple[int, ...] = ()
    auth: Auth = "api_key"
    tag: str = "episodes"
    description: str = ""


class ApiRoute(Route):
    """A Starlette route that carries its documented operation."""

    def __init__(self, operation: Operation, endpoint: Callable[[Request], Awaitable[Response]]) -> None:
        super().__init__(operation.path, endpoint, methods=[operation.method])
        self.operation = operation
