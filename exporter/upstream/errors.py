"""One exception type for every way the platform can fail us."""

from __future__ import annotations

from typing import Any, Literal

ErrorKind = Literal[
    "http",  # a non-2xx status
    "error_body",  # HTTP 2xx with an error body (rate limit and the like)
    "invalid_body",  # not JSON, or JSON of the wrong shape
    "timeout",
    "connection",
    "auth",  # no usable token (login rejected or token endpoint failing)
    "invalid_request",  # refused locally, nothing sent (e.g. a '..' path segment)
]


class UpstreamError(Exception):
    """A failed platform request: HTTP status (0 when there was none), area and message."""

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
    """An error shape returned with HTTP 2xx (e.g. ``{"status": "error", "message": ...}``)."""
    if not isinstance(body, dict):
        return False
    if body.get("success") is False:
        return True
    status = body.get("status")
    return isinstance(status, str) and status.strip().lower() in ("error", "fail", "failed")
