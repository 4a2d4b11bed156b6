"""Slow windows get smaller; a settle read that keeps failing does not block the runs behind it."""

from __future__ import annotations

import pytest

from exporter.exposition import Store
from exporter.runtime.selfmetrics import SelfMetrics
from exporter.support.clock import FakeClock
from exporter.traffic.policy import (
    SETTLE_ATTEMPTS,
    SETTLE_BACKOFF_MAX_SECONDS,
    SETTLE_GIVE_UP_SECONDS,
)
from exporter.upstream.errors import UpstreamError
from tests.rig.source import COUNTED, FakeSource, MakePoller
from tests.traffic.logcapture import capture_logs
from tests.traffic.test_poller import counter, drive, windows


async def test_a_504_on_a_long_window_halves_it_down_to_what_the_platform_answers(
    source: FakeSource,
    make_poller: MakePoller,
    clock: FakeClock,
    store: Store,
    metrics: SelfMetrics,
) -> None:
    poller = make_poller(revisit_minutes=5, catch_up_minutes=60)
    await poller.poll("acme")
    led = poller.accounts.ledger("acme")
    start = led.cursor
    await drive(poller, clock, 3 * 60)
    first = led.cursor
    assert first is not None
    assert start is not None
    source.fail = UpstreamError("traffic", "http", "Bad Gateway", 502)
    await drive_failing(poller, clock, 12 * 60)
    source.fail = None
    source.slow_over = 3  # the platform times out on windows over 3 minutes
    source.calls.clear()
    with capture_logs() as logs:
        await drive(poller, clock, 15)
    assert led.cursor is not None
    assert led.cursor >= first + 12 * 60  # the whole gap was read in this one poll
    asked = [c.minutes for c in source.calls if not c.per_resource]
    assert asked[:4] == [1, 10, 5, 2]  # probe, then 10 -> 5 -> 2 minutes
    assert max(c.minutes for c in source.calls if c.ok) == 2
    assert [e["longest_minutes"] for e in logs if e["event"] == "traffic_window_halved"] == [5, 2]
    source.calls.clear()
    await drive(poller, clock, 20 * 60)  # settle reads of the 5-minute runs go in 2s and 1s
    assert all(c.minutes <= 2 for c in source.calls)
    assert all(c.ok for c in source.calls)
    covered = range(start, led.cursor + 60, 60)  # figures are final at once in this fake
    for key in COUNTED:
        assert counter(store, key) == source.final(key, covered), key
        assert counter(store, key, "r2") == source.final(key, covered, "r2"), key
    assert windows(metrics, "missed") == 0


async def drive_failing(poller: object, clock: FakeClock, seconds: float) -> None:
    end = clock.time() + seconds
    while clock.time() < end:
        with pytest.raises(UpstreamError):
            await poller.poll("acme")  # type: ignore[attr-defined]
        clock.advance(15)


async def test_a_settle_read_that_keeps_failing_does_not_hold_back_the_runs_behind_it(
    source: FakeSource,
    make_poller: MakePoller,
    clock: FakeClock,
    store: Store,
    metrics: SelfMetrics,
) -> None:
    poller = make_poller(revisit_minutes=3)
    led = poller.accounts.ledger("acme")
    await drive(poller, clock, 15)
    stuck = led.pending[0]
    source.fail_when = lambda s, e: s == stuck.start and e - s > 60  # only its settle read
    failures = 0
    settled_behind = 0
    failed_first = given_up_at = 0.0
    for _ in range(4 * 60 * 8):  # eight hours of polls
        before = len(led.pending)
        try:
            await poller.poll("acme")
        except UpstreamError:
            failures += 1
            failed_first = failed_first or clock.time()
        if stuck in led.pending and len(led.pending) < before:
            settled_behind += 1
        if stuck not in led.pending and not given_up_at:
            given_up_at = clock.time()
        clock.advance(15)
    assert stuck not in led.pending
    assert settled_behind >= 3  # later runs were settled while the stuck one waited
    # Given up only after the platform failed it for SETTLE_GIVE_UP_SECONDS (backing off up
    # to 15 minutes: 5 failures in the first hour are not enough any more).
    assert given_up_at - failed_first >= SETTLE_GIVE_UP_SECONDS
    assert given_up_at - failed_first < SETTLE_GIVE_UP_SECONDS + SETTLE_BACKOFF_MAX_SECONDS + 60
    assert failures > SETTLE_ATTEMPTS
    assert windows(metrics, "given_up") == stuck.minutes
    assert len(led.pending) <= 2  # nothing piles up behind it
    assert counter(store, "edge_requests_total") is not None
