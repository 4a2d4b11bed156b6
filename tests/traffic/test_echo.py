"""The window a reply says it covers is checked: a shorter answer fails, long windows stop."""

from __future__ import annotations

import pytest

from exporter.exposition import Store
from exporter.runtime.selfmetrics import SelfMetrics
from exporter.support.clock import FakeClock
from exporter.traffic.echo import WindowMismatch, check_echo, echo_seconds
from exporter.traffic.parse import COUNT_INDEX
from exporter.traffic.reply import MetricsReply
from exporter.traffic.windows import Window
from tests.rig.source import COUNTED, T0, FakeSource, MakePoller


def reply(start: str, end: str, account: str = "acme") -> MetricsReply:
    return MetricsReply(start, end, account, ())


def test_echo_seconds_reads_the_documented_form_and_variants() -> None:
    assert echo_seconds("2026-01-01T00:00:00") == T0
    assert echo_seconds("2026-01-01T00:01:00Z") == T0 + 60
    assert echo_seconds("2026-01-01T03:01:00+03:00") == T0 + 60
    assert echo_seconds("2026-01-01T00:02") == T0 + 120
    assert echo_seconds("yesterday") is None


def test_check_echo_accepts_the_window_asked_and_missing_fields() -> None:
    w = Window(T0, T0 + 600)
    check_echo(reply("2026-01-01T00:00:00", "2026-01-01T00:10:00"), "acme", w)
    check_echo(reply("", "", ""), "acme", w)


@pytest.mark.parametrize(
    ("start", "end", "account", "problem"),
    [
        ("2026-01-01T00:09:00", "2026-01-01T00:10:00", "acme", "start"),
        ("2026-01-01T00:00:00", "2026-01-01T00:01:00", "acme", "end"),
        ("2026-01-01T00:00:00", "2026-01-01T00:10:00", "other", "account 'other'"),
    ],
)
def test_check_echo_refuses_another_window_or_account(
    start: str, end: str, account: str, problem: str
) -> None:
    w = Window(T0, T0 + 600)
    with pytest.raises(WindowMismatch, match=problem) as err:
        check_echo(reply(start, end, account), "acme", w)
    assert err.value.window == w
    assert err.value.status == 200


async def test_a_shortened_backfill_window_fails_and_switches_to_one_minute_reads(
    make_poller: MakePoller, source: FakeSource, clock: FakeClock, metrics: SelfMetrics
) -> None:
    source.one_minute = True
    poller = make_poller(catch_up_minutes=30)
    await poller.poll("acme")
    led = poller.accounts.ledger("acme")
    first = led.cursor
    assert first is not None
    clock.advance(12 * 60)  # 12 new minutes: 10 + 2 planned, the 10 answered with one
    await poller.poll("acme")
    assert led.long_refused
    mismatched = {"account": "acme", "outcome": "mismatched"}
    assert metrics.registry.get_sample_value("cdnvideo_traffic_windows_total", mismatched) == 10
    assert led.cursor == first + 12 * 60
    covered = range(first, led.cursor + 60, 60)
    for key in COUNTED:
        assert led.totals[COUNT_INDEX[key]] == source.final(key, covered), key
        assert led.series["r2"].values[COUNT_INDEX[key]] == source.final(key, covered, "r2")
    assert max(c.minutes for c in source.calls[-4:]) == 1


def test_clock_skew_is_read_from_the_date_header() -> None:
    from exporter.upstream.reply import Reply, clock_skew

    def reply(date: str, received_at: float) -> Reply:
        return Reply(200, b"{}", {}, "application/json", date, received_at)

    assert clock_skew(reply("Thu, 01 Jan 2026 00:00:00 GMT", T0 + 480.2)) == pytest.approx(-479.7)
    assert clock_skew(reply("Thu, 01 Jan 2026 00:05:00 GMT", T0)) == pytest.approx(300.5)
    assert clock_skew(reply("", T0)) is None
    assert clock_skew(reply("not a date", T0)) is None


def test_the_platform_clock_is_believed_after_3_agreeing_readings_and_followed_either_way(
    make_poller: MakePoller, metrics: SelfMetrics
) -> None:
    poller = make_poller()
    lag, ready = [], []
    for skew in (-60.0, -60.5, -59.5, 3600.0, -60.0, 0.4, -0.3, 0.0, 30.0, 30.0, 30.5, -5000.0):
        poller.clocks.observe(skew)
        lag.append(poller.clocks.platform_time(T0) - T0)
        ready.append(poller.clocks.ready_time(T0) - T0)
    # The third agreeing reading confirms -60; one reading an hour ahead changes nothing; three
    # readings near 0 take it back; +30 (the platform ahead) is followed too, for the lag gauge
    # and for reads; one reading of -5000 is an outlier. Before the first is confirmed, reads
    # wait for the furthest reading behind ours (none is read early on an unconfirmed clock).
    assert lag == [0, 0, -60, -60, -60, -60, -60, 0, 0, 0, 30, 30]
    assert ready == [-60, -60.5, -60, -60, -60, -60, -60, 0, 0, 0, 30, 30]
    assert metrics.registry.get_sample_value("cdnvideo_upstream_clock_skew_seconds") == -5000.0
    rejected = metrics.registry.get_sample_value("cdnvideo_upstream_clock_readings_rejected_total")
    # 3600; 0.4 and -0.3, 30.0 and 30.0 (until the third confirmed them); -5000
    assert rejected == 6
    from exporter.traffic.skew import PlatformClock

    far = PlatformClock()
    for _ in range(3):
        far.observe(-7200.0)
    assert far.believed == -7200.0  # a confirmed clock is believed, however far


async def test_a_bad_gauge_value_is_counted_each_time_and_logged_once_an_hour(
    make_poller: MakePoller,
    source: FakeSource,
    clock: FakeClock,
    metrics: SelfMetrics,
    store: Store,
) -> None:
    from tests.traffic.logcapture import capture_logs
    from tests.traffic.test_poller import counter, drive

    source.extra = {"edge_hit_ratio": "n/a", "edge_bandwidth": float("nan")}
    poller = make_poller(revisit_minutes=0)
    with capture_logs() as logs:
        await poller.poll("acme")
        first = poller.accounts.ledger("acme").cursor
        clock.advance(15)
        await drive(poller, clock, 10 * 60 - 15)
    rejected = {"area": "traffic", "field": "edge_hit_ratio"}
    # 10 minutes x (1 totals row + 3 resource rows)
    assert (
        metrics.registry.get_sample_value("cdnvideo_upstream_values_rejected_total", rejected) == 40
    )
    events = [e for e in logs if e["event"] == "upstream_value_rejected"]
    assert sorted(e["field"] for e in events) == ["edge_bandwidth", "edge_hit_ratio"]
    assert all(e["account"] == "acme" for e in events)
    with capture_logs() as logs:
        await drive(poller, clock, 3600)
    events = [e for e in logs if e["event"] == "upstream_value_rejected"]
    assert len(events) == 2 * 1  # once more per field after an hour
    assert counter(store, "edge_requests_total") == source.final(
        "edge_requests_total",
        range(first, poller.accounts.ledger("acme").cursor + 60, 60),  # type: ignore[operator]
    )


def test_before_a_clock_is_confirmed_a_reading_behind_ours_holds_the_ready_time_back() -> None:
    """Until some readings agree, the ready time follows ours or the furthest reading behind
    it (not one ahead, nor one within the tolerance); once confirmed, the believed clock."""
    from exporter.traffic.skew import PlatformClock

    clock = PlatformClock()
    assert clock.ready_skew() == 0.0
    assert not clock.trusted()  # no reading yet: first reads one minute at a time
    clock.observe(3600.0)  # ahead (a bogus Date): makes nothing ready early
    assert clock.ready_skew() == 0.0
    assert not clock.trusted()
    clock.observe(-3.0)  # within the tolerance: agrees with ours
    assert clock.ready_skew() == 0.0
    clock.observe(-1200.0)
    assert clock.ready_skew() == -1200.0
    assert not clock.trusted()
    clock.observe(-1200.4)
    assert not clock.known
    assert clock.ready_skew() == -1200.4
    clock.observe(-1199.8)  # the third agreeing reading: confirmed
    assert clock.known
    assert clock.trusted()
    assert clock.ready_skew() == clock.believed == -1200.0
    spread = PlatformClock()  # nodes 4 s apart never confirm a skew, all agree with ours
    for reading in (-2.0, 2.0, -2.0):
        spread.observe(reading)
    assert not spread.known
    assert spread.trusted()
    assert spread.ready_skew() == 0.0
