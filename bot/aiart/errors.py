"""Errors raised by the image-service client.

    AiartError
     ├── APIError              the service answered, with an error (status_code, code, msg)
     │    ├── BadRequest       HTTP 400: parameters incomplete or malformed; never retried
     │    ├── Unauthorized     HTTP 401: API key missing or invalid; never retried
     │    ├── NoCredits        envelope code 510: the account has no tokens left
     │    ├── RateLimited      HTTP 429; retry_after holds the seconds the service asked for
     │    └── ServerError      HTTP 5xx or envelope code 999
     ├── TransportError        no usable answer came back
     │    ├── ConnectError     the request surely never reached the service (safe to resend a POST)
     │    └── Timeout          the request may have reached it
     └── MalformedResponse     an answer that is not the documented JSON envelope
"""

from __future__ import annotations


class AiartError(Exception):
    """Base of every error the client raises."""

    retryable: bool = False


class APIError(AiartError):
    """The service answered with an error."""

    def __init__(self, message: str, *, status_code: int, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status_code = status_code
        self.code = code

    def __repr__(self) -> str:
        return f"{type(self).__name__}(status_code={self.status_code}, code={self.code!r}, message={self.message!r})"


class BadRequest(APIError):
    """HTTP 400: the request's parameters are incomplete or wrongly formatted."""


class Unauthorized(APIError):
    """HTTP 401: the API key is missing or invalid."""


class NoCredits(APIError):
    """Envelope code 510: no tokens left on the account."""


class RateLimited(APIError):
    """HTTP 429: too many requests; wait `retry_after` seconds (None when not said)."""

    retryable = True

    def __init__(self, message: str, *, status_code: int = 429, code: str | None = None,
                 retry_after: float | None = None) -> None:
        super().__init__(message, status_code=status_code, code=code)
        self.retry_after = retry_after


class ServerError(APIError):
    """HTTP 5xx or envelope code 999: a fault on the service's side."""

    retryable = True


class TransportError(AiartError):
    """No usable answer came back (network fault or timeout)."""

    retryable = True


class ConnectError(TransportError):
    """The connection failed before the request was sent."""


class Timeout(TransportError):
    """The service did not answer in time; the request may have reached it."""


class MalformedResponse(AiartError):
    """The answer is not the documented JSON envelope."""

    retryable = True
