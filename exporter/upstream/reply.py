"""A platform answer as received (``Reply``): status, body, headers, and what its headers say:
how long ``Retry-After`` asks to wait, and the platform's clock against ours (``Date``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC
from email.utils import parsedate_to_datetime
from typing import Any


@dataclass(frozen=True)
class Reply:
    """A platform answer as received: status, raw body, the JSON when it parsed, headers."""

    status: int
    body: bytes
    data: Any
    content_type: str
    date: str = ""  # the `Date` header: the platform's clock (second precision)
    received_at: float = 0.0  # our clock when the reply arrived
    headers: Mapping[str, str] = field(default_factory=dict)
    # False: a large 2xx body left for the caller to decode (``request(raw=True)``); the
    # caller hands the decoded value to ``UpstreamClient.verdict``
    decoded: bool = True

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    @property
    def retry_after(self) -> float | None:
        """Seconds the ``Retry-After`` header asks to wait (delta-seconds or an HTTP date, read
        against ``received_at``: the injected clock's time when the reply arrived)."""
        return retry_after_seconds(self.headers.get("Retry-After"), self.received_at)


def retry_after_seconds(value: str | None, now: float) -> float | None:
    """A ``Retry-After`` value in seconds from ``now``; None when absent or unreadable."""
    if not value:
        return None
    text = value.strip()
    if text.isdigit():
        return float(text)
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, when.timestamp() - now)


def clock_skew(reply: Reply) -> float | None:
    """The platform's clock minus ours, from the reply's `Date` header (None without one).

    The header has whole seconds and is written before the body is sent, so the middle of
    that second is taken; the result is within about a second plus the request's latency.
    """
    if not reply.date or not reply.received_at:
        return None
    try:
        when = parsedate_to_datetime(reply.date)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp() + 0.5 - reply.received_at
