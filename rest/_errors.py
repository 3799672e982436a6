"""The one error body of every REST route, and the exception that carries it to the edge."""

from __future__ import annotations

from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException

from occusim.environments import OccusimError


class FieldError(BaseModel):
    """One invalid field of a request."""

    field: str = Field(description="Where in the request, e.g. task.rubric.items[0].weight; empty for the body.")
    message: str
    type: str = Field(description="The validation error's kind, e.g. missing, extra_forbidden.")


class ErrorBody(BaseModel):
    """Every error response of every route, including those of the framework (404, 405, 413, 422)."""

    error: str = Field(description="What went wrong and what to do about it.")
    type: str = Field(description="Machine-readable kind, e.g. not_found, unauthorized, invalid_body.")
    errors: list[FieldError] | None = Field(default=None, description="Per-field problems of an invalid request.")


class ApiError(HTTPException, OccusimError):
    """An error answered as an ErrorBody with an HTTP status.

    It is Starlette's HTTPException, so FastAPI lets it through while reading a body (a body over the
    limit) instead of turning it into a generic 400.
    """

    def __init__(
        self, status: int, kind: str, message: str, *, errors: list[FieldError] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(status, detail=message, headers=headers)
        self.kind, self.message, self.errors = kind, message, errors

    def body(self) -> ErrorBody:
        return ErrorBody(error=self.message, type=self.kind, errors=self.errors)


def unauthorized(message: str, *, presented: bool = False) -> ApiError:
    """401 with a Bearer challenge; a credential that was `presented` but is wrong is `invalid_token` (RFC 6750
    section 3.1), so OAuth-capable clients report it instead of starting a login."""
    challenge = 'Bearer realm="occusim", error="invalid_token"' if presented else 'Bearer realm="occusim"'
    return ApiError(401, "unauthorized", message, headers={"WWW-Authenticate": challenge})
