"""Window planning: alignment, delay, cursor, catch-up and chunking, without any clock."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from exporter.traffic.windows import (
    Window,
    chunks,
    last_ready_minute,
    minute_floor,
    plan_reads,
    settle_cap_minutes,
)


def ts(text: str) -> int:
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp())


def test_minute_is_ready_only_delay_seconds_after_it_closes() -> None:
    m = ts("2026-03-01T10:15:00")
    assert last_ready_minute(m + 60 + 120 - 1, 120) == m - 60
    assert last_ready_minute(m + 60 + 120, 120) == m
    assert last_ready_minute(m + 60 + 120 + 59.9, 120) == m


def test_alignment_at_an_hour_boundary() -> None:
    now = ts("2026-03-01T11:02:00") + 0.5  # 11:00 closed at 11:01, delay 60 s -> ready
    assert last_ready_minute(now, 60) == ts("2026-03-01T11:00:00")
    assert last_ready_minute(now - 1, 60) == ts("2026-03-01T10:59:00")


def test_alignment_at_a_day_boundary() -> None:
    now = ts("2026-01-01T00:02:30")
    minute = last_ready_minute(now, 120)
    assert minute == ts("2025-12-31T23:59:00")
    plan = plan_reads(minute - 120, now + 30, 120, 60)  # two more minutes, across midnight
    assert [str(w) for w in plan.windows] == ["2025-12-31T23:58..2026-01-01T00:01"]
    assert plan.windows[0].minutes == 3


def test_minute_floor_is_utc_and_ignores_fractions() -> None:
    assert minute_floor(ts("2026-06-30T23:59:59") + 0.999) == ts("2026-06-30T23:59:00")


def test_first_start_reads_only_the_last_ready_minute() -> None:
    now = ts("2026-03-01T10:20:10")
    plan = plan_reads(None, now, 120, 60)
    assert plan.windows == (Window(ts("2026-03-01T10:17:00"), ts("2026-03-01T10:18:00")),)
    assert (plan.missed, plan.backfill) == (0, False)


def test_cursor_advances_one_minute_at_a_time_in_steady_state() -> None:
    cursor = ts("2026-03-01T10:17:00")
    now = ts("2026-03-01T10:21:00")  # 10:18 becomes ready now
    plan = plan_reads(cursor, now, 120, 60)
    assert plan.windows == (Window(cursor + 60, cursor + 120),)
    assert not plan.backfill
    assert plan_reads(cursor + 60, now + 59, 120, 60).windows == ()


def test_a_25_minute_gap_is_read_as_10_10_5_oldest_first() -> None:
    cursor = ts("2026-03-01T10:00:00")
    now = cursor + 60 + 25 * 60 + 120
    plan = plan_reads(cursor, now, 120, 60)
    assert [w.minutes for w in plan.windows] == [10, 10, 5]
    assert plan.windows[0].start == cursor + 60
    assert plan.backfill
    assert plan.missed == 0
    assert plan.minutes == 25


def test_a_gap_longer_than_catch_up_skips_the_oldest_minutes_as_missed() -> None:
    cursor = ts("2026-03-01T10:00:00")
    now = cursor + 60 + 100 * 60 + 120  # 100 unaccounted minutes
    plan = plan_reads(cursor, now, 120, catch_up_minutes=30)
    assert plan.missed == 69  # the newest minute plus 30 of catch-up are read
    assert plan.minutes == 31
    assert plan.windows[0].start == cursor + 60 + 69 * 60
    assert plan_reads(cursor, now, 120, catch_up_minutes=0).windows[0].minutes == 1


def test_one_minute_windows_when_long_windows_are_refused() -> None:
    cursor = ts("2026-03-01T10:00:00")
    plan = plan_reads(cursor, cursor + 60 + 12 * 60 + 120, 120, 60, max_window_minutes=1)
    assert [w.minutes for w in plan.windows] == [1] * 12


def test_window_must_be_minute_aligned() -> None:
    with pytest.raises(ValueError, match="minute-aligned"):
        Window(30, 90)
    with pytest.raises(ValueError, match="minute-aligned"):
        Window(60, 60)


def test_settle_runs_are_revisit_minutes_long_at_most_ten() -> None:
    assert settle_cap_minutes(5, True) == 5
    assert settle_cap_minutes(10, True) == 10
    assert settle_cap_minutes(5, False) == 1


@given(
    first=st.integers(0, 10_000),
    count=st.integers(1, 300),
    longest=st.integers(1, 10),
)
def test_chunks_cover_every_minute_exactly_once(first: int, count: int, longest: int) -> None:
    start = first * 60
    windows = chunks(start, start + (count - 1) * 60, longest)
    assert windows[0].start == start
    assert windows[-1].end == start + count * 60
    assert all(a.end == b.start for a, b in itertools.pairwise(windows))
    assert all(1 <= w.minutes <= longest for w in windows)
    assert all(w.minutes == longest for w in windows[:-1])


@given(cursor=st.integers(0, 1000), now=st.integers(0, 200_000), catch_up=st.integers(0, 90))
def test_plan_accounts_every_ready_minute_once(cursor: int, now: int, catch_up: int) -> None:
    c = cursor * 60
    plan = plan_reads(c, now, 120, catch_up)
    ready = max(0, (last_ready_minute(now, 120) - c) // 60)
    assert plan.missed + plan.minutes == ready
    assert plan.minutes <= catch_up + 1
    if plan.windows:
        assert plan.windows[0].start == c + 60 + plan.missed * 60
