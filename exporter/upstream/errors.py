"""One exception type for every way the platform can fail us."""

from __future__ import annotations

import os
import re
from typing import Any, Literal

import aiohttp

ErrorKind = Literal[
    "http",  # a non-2xx status
    "error_body",  # HTTP 2xx with an error body (rate limit and the like)
    "invalid_body",  # not JSON, or JSON of the wrong shape
    "timeout",
    "connection",
    "auth",  # no usable token (login rejected or token endpoint failing)
    "invalid_request",  # refused locally, nothing sent (e.g. a '..' path segment)
    "budget",  # not sent: the account's request budget is spent or it is backing off
]

# Reason phrases for statuses that come without a body (420 is not in http.HTTPStatus).
_PHRASES = {
    400: "bad request",
    401: "unauthorized (token missing, invalid or expired)",
    403: "forbidden",
    404: "not found",
    420: "rate limit or invalid parameters",
    422: "invalid parameters",
    429: "too many requests",
    500: "internal server error",
    502: "bad gateway",
    503: "service unavailable",
    504: "gateway timeout",
}
_RATE_WORDS = ("rate limit", "too many", "throttl")
_TOKEN_WORDS = ("invalid", "expired")


class UpstreamError(Exception):
    """A failed platform request: status, area and message.

    ``status`` is the HTTP status (0 when there was none); for a 2xx reply whose body carries
    a numeric error status of its own (``{"status": 403, ...}``) it is that status.
    """

    def __init__(
        self,
        area: str,
        kind: ErrorKind,
        message: str,
        status: int = 0,
        body: Any = None,
    ) -> None:
        super().__init__(f"{area}: {message}" + (f" (HTTP {status})" if status else ""))
        self.area = area
        self.kind = kind
        self.status = status
        self.message = message
        self.body = body

    @property
    def retryable(self) -> bool:
        """Worth another try for an idempotent read: 5xx, timeouts, connection errors."""
        return self.kind in ("timeout", "connection") or (
            self.kind == "http" and self.status >= 500
        )

    @property
    def failed_hosts(self) -> list[str]:
        """DVR nodes a deletion failed on (``failed_hosts`` of a DVR 500 body), else []."""
        return failed_hosts(self.body)

    @property
    def expired_token(self) -> bool:
        """A 403 whose message says the token expired."""
        return self.status == 403 and "expired" in self.message.lower()

    @property
    def rate_limited(self) -> bool:
        """The platform said slow down: 429, a 420 or 2xx error body about a rate limit."""
        return says_rate_limited(self.status, self.message)

    @property
    def invalid_parameters(self) -> bool:
        """The platform refused the request's parameters: 422, or a 420 not about a rate limit."""
        return self.kind == "http" and (
            self.status == 422 or (self.status == 420 and not self.rate_limited)
        )


def says_rate_limited(status: int, message: str | None) -> bool:
    """429 always, and a 420 without any text; otherwise a reply (420, a 2xx error body)
    whose error text speaks of a rate limit."""
    if status == 429 or (status == 420 and not message):
        return True
    text = (message or "").lower()
    return any(word in text for word in _RATE_WORDS)


def says_token_refused(status: int, message: str | None) -> bool:
    """401 whatever the body (often none), or 403 whose text says the token is invalid or
    expired ("Invalid token or no access", "Token is expired"). A bare 403 is not enough."""
    if status == 401:
        return True
    text = (message or "").lower()
    return status == 403 and "token" in text and any(w in text for w in _TOKEN_WORDS)


def status_text(status: int) -> str:
    """What a body-less error reply means, from its status alone."""
    phrase = _PHRASES.get(status) or ("server error" if status >= 500 else "client error")
    return f"HTTP {status} {phrase} (no body)"


# A status written as text: ASCII digits only, and few enough that int() reads them
# ("²".isdigit() is true, and int() refuses more than 4,300 digits).
_STATUS_DIGITS = re.compile(r"[0-9]{1,9}")


def body_status(body: Any) -> int | None:
    """The integer ``status`` of a reply body (the token endpoint's ``"status": 200``), if any."""
    status = body.get("status") if isinstance(body, dict) else None
    if isinstance(status, bool):
        return None
    if isinstance(status, int):
        return status
    if isinstance(status, str) and _STATUS_DIGITS.fullmatch(status.strip()):
        return int(status)
    return None


def failed_hosts(body: Any) -> list[str]:
    """``failed_hosts`` of a DVR error body as strings; [] when absent."""
    hosts = body.get("failed_hosts") if isinstance(body, dict) else None
    return [str(h) for h in hosts] if isinstance(hosts, list) else []


def error_message(body: Any) -> str | None:
    """The upstream's message from any of the four areas' error shapes, if the body is one.

    Restream ``{success, code, message}``, DVR and metrics ``{status, description}`` (DVR
    deletions add ``failed_hosts``, named in the message), talking-head ``{status, message}``.
    """
    if not isinstance(body, dict):
        return None
    message = None
    for key in ("message", "description", "error", "detail"):
        value = body.get(key)
        if isinstance(value, str) and value:
            message = value
            break
    if message is None:
        status = body.get("status")
        if isinstance(status, str) and status:
            message = status
    hosts = failed_hosts(body)
    if hosts:
        message = f"{message or 'failed'} (failed hosts: {', '.join(hosts)})"
    return message


def is_error_body(body: Any) -> bool:
    """An error shape returned with HTTP 2xx (e.g. ``{"status": "error", "message": ...}``, or
    a numeric ``status`` other than 2xx such as a refused login's ``{"status": 403, ...}``)."""
    if not isinstance(body, dict):
        return False
    if body.get("success") is False:
        return True
    code = body_status(body)
    if code is not None:
        return not 200 <= code < 300
    status = body.get("status")
    return isinstance(status, str) and status.strip().lower() in ("error", "fail", "failed")


def connection_failure(exc: BaseException) -> str:
    """What failed below HTTP, in words an operator can act on: ``DNS lookup of HOST failed
    (Name or service not known)``, ``connection to HOST:PORT failed (Connection refused)``,
    a TLS certificate or handshake refused, the connection closed before a reply; the
    exception's class only where nothing better is known."""
    if isinstance(exc, aiohttp.ClientConnectorCertificateError):
        return f"TLS certificate of {exc.host} not accepted ({exc.certificate_error})"
    if isinstance(exc, aiohttp.ClientConnectorSSLError):
        return f"TLS handshake with {exc.host}:{exc.port} failed ({os_reason(exc.os_error)})"
    if isinstance(exc, aiohttp.ClientConnectorDNSError):
        return f"DNS lookup of {exc.host} failed ({os_reason(exc.os_error)})"
    if isinstance(exc, aiohttp.ClientConnectorError):
        return f"connection to {exc.host}:{exc.port} failed ({os_reason(exc.os_error)})"
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        return "the platform closed the connection before it replied"
    if isinstance(exc, aiohttp.ClientPayloadError):
        return f"the reply was cut off ({exc})"
    return os_reason(exc)


def os_reason(exc: BaseException) -> str:
    """An exception as its reason: the system's words for an OS error number
    (``Connection refused``), else its text, else its class."""
    if isinstance(exc, OSError):
        if isinstance(exc.errno, int) and exc.errno > 0:
            return os.strerror(exc.errno)
        if exc.strerror:
            return str(exc.strerror)
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
