"""The failures of the lean OpenAI-compatible path, named as litellm names them, so that a ProviderError's
summary reads the same whichever path made the call."""

from __future__ import annotations

from typing import ClassVar

from occusim.environments import OccusimError


class ProviderHTTPError(OccusimError):
    """An OpenAI-compatible endpoint failed: an HTTP error status, a connection failure or a timeout.

    `status_code` is the HTTP status (None when no response came); `transient` says whether retrying can help.
    """

    transient = False
    # The work failed at the provider, not the user's input.
    exit_code: ClassVar[int] = 1

    def __init__(self, message: str, status_code: int | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code


class TransientHTTPError(ProviderHTTPError):
    """A failure that retrying can help with: a rate limit, a timeout, a server error or no connection."""

    transient = True


class BadRequestError(ProviderHTTPError):
    pass


class AuthenticationError(ProviderHTTPError):
    pass


class PermissionDeniedError(ProviderHTTPError):
    pass


class NotFoundError(ProviderHTTPError):
    pass


class APIError(ProviderHTTPError):
    """Any other status below 500 that is neither a rate limit nor a timeout."""


class RateLimitError(TransientHTTPError):
    pass


class Timeout(TransientHTTPError):
    """No answer in time: the client's own deadline, or the endpoint's 408/504."""


class InternalServerError(TransientHTTPError):
    pass


class BadGatewayError(TransientHTTPError):
    pass


class ServiceUnavailableError(TransientHTTPError):
    pass


class APIConnectionError(TransientHTTPError):
    pass


class EndpointUnreachableError(ProviderHTTPError):
    """The endpoint refused the connection or its host name does not resolve: a setting to fix, not an outage
    that waiting cures (a connection reset or a dropped connection stays an APIConnectionError)."""


_BY_STATUS: dict[int, type[ProviderHTTPError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    408: Timeout,
    422: BadRequestError,
    429: RateLimitError,
    500: InternalServerError,
    502: BadGatewayError,
    503: ServiceUnavailableError,
    504: Timeout,
}


def status_error(status: int, message: str) -> ProviderHTTPError:
    """The error for an HTTP error `status` whose body said `message`."""
    kind = _BY_STATUS.get(status) or (InternalServerError if status >= 500 else APIError)
    return kind(f"HTTP {status}: {message}", status_code=status)
