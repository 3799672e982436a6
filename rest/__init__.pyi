# The public names of occusim.rest. `__init__.py` loads them lazily from this list, so that importing one name
# loads only the modules it needs, while type checkers see the real types.
from ._access_log import redact_access_log, without_query_values
from ._app import BODY_ERRORS, error_responses, rest_app
from ._body_limit import BodyLimit, body_too_large, declares_too_much, limited_receive
from ._errors import ApiError, ErrorBody, FieldError, unauthorized
from ._handlers import error_response
from ._json_body import MAX_BODY_DEPTH, JsonBodyRoute
from ._read_deadlines import read_deadline_protocol

__all__ = [
    "BODY_ERRORS",
    "ApiError",
    "BodyLimit",
    "ErrorBody",
    "FieldError",
    "JsonBodyRoute",
    "MAX_BODY_DEPTH",
    "body_too_large",
    "declares_too_much",
    "error_response",
    "error_responses",
    "limited_receive",
    "read_deadline_protocol",
    "redact_access_log",
    "rest_app",
    "unauthorized",
    "without_query_values",
]
