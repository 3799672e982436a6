"""The REST layer both HTTP services share: one error body, its handlers, the body size limit, app assembly."""

from ._app import BODY_ERRORS, error_responses, rest_app
from ._body_limit import BodyLimit
from ._errors import ApiError, ErrorBody, FieldError, unauthorized
from ._handlers import error_response

__all__ = [
    "BODY_ERRORS",
    "ApiError",
    "BodyLimit",
    "ErrorBody",
    "FieldError",
    "error_response",
    "error_responses",
    "rest_app",
    "unauthorized",
]
