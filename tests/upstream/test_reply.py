"""A platform answer as received: the wait ``Retry-After`` asks for, read as seconds or as an
HTTP date against the time the reply arrived, and the platform's clock from ``Date``."""

from __future__ import annotations

import pytest

from exporter.upstream.reply import Reply, clock_skew, retry_after_seconds

ARRIVED = 1_767_225_600.0  # 2026-01-01T00:00:00Z


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("40", 40.0),
        (" 7 ", 7.0),
        ("Thu, 01 Jan 2026 00:01:30 GMT", 90.0),
        ("Wed, 31 Dec 2025 23:59:00 GMT", 0.0),  # a date already past: go now
        ("soon", None),
        ("", None),
        (None, None),
    ],
)
def test_retry_after_is_read_as_seconds_or_a_date(value: str | None, seconds: float | None) -> None:
    assert retry_after_seconds(value, ARRIVED) == seconds


def test_a_reply_reads_its_retry_after_against_its_arrival() -> None:
    reply = Reply(429, b"", None, "", received_at=ARRIVED, headers={"Retry-After": "30"})
    assert reply.retry_after == 30.0
    assert Reply(429, b"", None, "", received_at=ARRIVED).retry_after is None


def test_the_platforms_clock_is_the_middle_of_the_date_second_against_the_arrival() -> None:
    ahead = Reply(200, b"", None, "", "Thu, 01 Jan 2026 00:00:03 GMT", received_at=ARRIVED)
    assert clock_skew(ahead) == 3.5
    assert clock_skew(Reply(200, b"", None, "", received_at=ARRIVED)) is None  # no Date
