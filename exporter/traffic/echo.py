"""The window a metrics reply says it covers (start, end, account), checked against the ask."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from exporter.traffic.reply import MetricsReply
from exporter.traffic.windows import Window
from exporter.upstream.errors import UpstreamError


class WindowMismatch(UpstreamError):
    """HTTP 200, but the reply covers another window or account than the one asked for."""

    def __init__(self, asked: Window, account: str, problem: str) -> None:
        super().__init__(
            "traffic", "invalid_body", f"asked for {account} {asked}, reply {problem}", 200
        )
        self.window = asked


def echo_seconds(text: str) -> int | None:
    """``YYYY-MM-DDThh:mm[:ss][Z|+hh:mm]`` (naive = UTC) -> Unix seconds; None when unreadable."""
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return int(when.timestamp())


def check_echo(reply: MetricsReply, account: str, asked: Window) -> None:
    """Raise WindowMismatch when the reply names another account, start or end.

    A field the reply leaves out (or sends in a form we cannot read) is not checked: the
    documented replies always carry all three, and a platform that omits them is trusted.
    """
    if reply.account and reply.account != account:
        raise WindowMismatch(asked, account, f"is for account {reply.account!r:.60}")
    for name, text, want in (("start", reply.start, asked.start), ("end", reply.end, asked.end)):
        got = echo_seconds(text) if text else None
        if got is not None and got != want:
            raise WindowMismatch(asked, account, f"covers {name} {text!r:.40}")


def stating(reply: MetricsReply, asked: Window) -> MetricsReply:
    """The reply with the window it covers stated: a reply that passed ``check_echo`` but left
    ``start`` or ``end`` out (or unreadable) covers the window asked for."""
    if echo_seconds(reply.start) is not None and echo_seconds(reply.end) is not None:
        return reply
    return replace(reply, start=_iso(asked.start), end=_iso(asked.end))


def _iso(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S")
