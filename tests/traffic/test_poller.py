"""The poller against a fake source: request cost, exact counters, late data, outages, restarts."""

from __future__ import annotations

from pathlib import Path

import pytest

from exporter.exposition import Fragment, Store, StoreKey
from exporter.runtime.selfmetrics import SelfMetrics
from exporter.support.clock import FakeClock
from exporter.traffic import TrafficPoller
from exporter.traffic.families import ACCOUNT, RESOURCE
from exporter.traffic.windows import minute_floor
from exporter.upstream.errors import UpstreamError
from tests.rig.source import COUNTED, Call, FakeSource, MakePoller, truth
from tests.traffic.logcapture import capture_logs

LATE = 200  # figures final 200 s after the minute closes; delay is 120 s
KEY_OF = {  # (family, side, code) of each counted key of the fake
    "edge_requests_total": (ACCOUNT.requests_total, {"side": "edge"}),
    "origin_requests_total": (ACCOUNT.requests_total, {"side": "origin"}),
    "edge_status_200": (ACCOUNT.responses_total, {"side": "edge", "code": "200"}),
    "edge_status_404": (ACCOUNT.responses_total, {"side": "edge", "code": "404"}),
    "edge_status_4xx": (ACCOUNT.responses_by_class_total, {"side": "edge", "class": "4xx"}),
    "origin_status_200": (ACCOUNT.responses_total, {"side": "origin", "code": "200"}),
    "edge_hit_bytes": (ACCOUNT.edge_hit_bytes_total, {}),
}


def text_of(path: str) -> str:
    return Path(path).read_text()


def late(minute: int, now: float) -> float:
    return 0.7 if now < minute + 60 + LATE else 1.0


def scrape(store: Store) -> None:
    """What Prometheus does: read ``/metrics`` (the scrape answered, so a new series held at
    0 shows its count from the next refresh on)."""
    store.mark_served(store.render_sync())


async def drive(poller: TrafficPoller, clock: FakeClock, seconds: float, step: float = 15) -> None:
    """Poll every ``step`` seconds, a scrape after each poll (Prometheus every 15 s)."""
    end = clock.time() + seconds
    while clock.time() < end:
        await poller.poll("acme")
        scrape(poller.publisher.store)
        clock.advance(step)


def fragment(store: Store) -> Fragment:
    """The account's fragment as a scrape reads it now (the scrape is answered)."""
    f = store.fragment(StoreKey("traffic", "acme"), include_stale=True)
    assert f is not None
    scrape(store)
    return f


def counter(store: Store, key: str, resource: str | None = None) -> float | None:
    spec, labels = KEY_OF[key]
    if resource is not None:
        spec = getattr(RESOURCE, next(n for n, s in vars(ACCOUNT).items() if s is spec))
        labels = {**labels, "resource": resource}
    return fragment(store).value(spec, account="acme", **labels)


def windows(metrics: SelfMetrics, outcome: str) -> float:
    v = metrics.registry.get_sample_value(
        "cdnvideo_traffic_windows_total", {"account": "acme", "outcome": outcome}
    )
    return v or 0.0


def minutes_of(calls: list[Call], per_resource: bool = False) -> list[int]:
    return [m for c in calls if c.per_resource == per_resource for m in range(c.start, c.end, 60)]


def expected(
    src: FakeSource, key: str, final: range, partial: range = range(0), resource: str | None = None
) -> float:
    """Truth over ``final`` minutes plus first-read (70 %) figures of ``partial`` minutes."""
    rids = [resource] if resource else list(src.resources)
    out = 0.0
    for r in rids:
        out += sum(truth(r, m)[key] for m in final if src.present(r, m))
        out += sum(int(truth(r, m)[key] * 0.7) for m in partial if src.present(r, m))
    return out


def split(poller: TrafficPoller, first: int) -> tuple[range, range]:
    """(settled, unsettled) accounted minutes from ``first`` to the cursor."""
    led = poller.accounts.ledger("acme")
    assert led.cursor is not None
    pending = led.pending[0].start if led.pending else led.cursor + 60
    return range(first, pending, 60), range(pending, led.cursor + 60, 60)


async def test_steady_state_costs_two_requests_a_minute_plus_settle_reads(
    source: FakeSource, make_poller: MakePoller, clock: FakeClock
) -> None:
    poller = make_poller(revisit_minutes=5)
    await drive(poller, clock, 60 * 60)
    first_reads = [c for c in source.calls if c.minutes == 1]
    settles = [c for c in source.calls if c.minutes > 1]
    assert len(first_reads) == 2 * 60  # one totals + one per-resource request per minute
    assert sorted(minutes_of(first_reads)) == sorted(set(minutes_of(first_reads)))
    assert {c.minutes for c in settles} == {5}
    assert len(settles) == 2 * 11  # a pair every 5 minutes once the first run is due
    assert minutes_of(settles) == minutes_of(first_reads)[: len(minutes_of(settles))]


async def test_counters_equal_the_final_truth_with_late_data(
    source: FakeSource, make_poller: MakePoller, clock: FakeClock, store: Store
) -> None:
    source.visible = late
    poller = make_poller(revisit_minutes=3)
    await drive(poller, clock, 40 * 60)
    first = source.calls[0].start
    settled, unsettled = split(poller, first)
    assert len(settled) >= 30
    for key in COUNTED:
        assert counter(store, key) == expected(source, key, settled, unsettled), key
        for rid in source.resources:
            want = expected(source, key, settled, unsettled, rid)
            assert counter(store, key, rid) == want, (key, rid)


async def test_a_late_increase_is_added_once(
    source: FakeSource,
    make_poller: MakePoller,
    clock: FakeClock,
    store: Store,
    metrics: SelfMetrics,
) -> None:
    source.visible = lambda m, now: 0.7 if now < m + 60 + 170 else 1.0
    poller = make_poller(revisit_minutes=1)
    m0 = minute_floor(clock.time()) - 180  # the newest ready minute at 01:00:05
    key = "edge_requests_total"
    await poller.poll("acme")
    assert counter(store, key) == 0  # a new series is shown at 0 on its first refresh
    clock.advance(5)
    await poller.poll("acme")
    assert counter(store, key) == expected(source, key, range(0), range(m0, m0 + 60, 60))
    clock.advance(55)
    await poller.poll("acme")  # m0 re-read (now final), m1 first read (partial)
    once = expected(source, key, range(m0, m0 + 60, 60), range(m0 + 60, m0 + 120, 60))
    assert counter(store, key) == once
    assert windows(metrics, "revised") == 1
    for _ in range(3):  # nothing new to read or settle: nothing added again
        clock.advance(5)
        await poller.poll("acme")
    assert counter(store, key) == once
    assert windows(metrics, "revised") == 1


async def test_a_decrease_is_never_subtracted(
    source: FakeSource,
    make_poller: MakePoller,
    clock: FakeClock,
    store: Store,
    metrics: SelfMetrics,
) -> None:
    source.visible = lambda m, now: 1.0 if now < m + 60 + 200 else 0.5
    poller = make_poller(revisit_minutes=2)
    await drive(poller, clock, 20 * 60)
    first = source.calls[0].start
    led = poller.accounts.ledger("acme")
    assert led.cursor is not None
    accounted = range(first, led.cursor + 60, 60)
    assert counter(store, "edge_hit_bytes") == expected(source, "edge_hit_bytes", accounted)
    assert windows(metrics, "revised") == 0
    assert any(c.minutes == 2 for c in source.calls)  # the re-reads did happen


async def test_settle_reads_never_change_gauges(
    source: FakeSource, make_poller: MakePoller, clock: FakeClock, store: Store
) -> None:
    source.visible = late
    poller = make_poller(revisit_minutes=1)
    await poller.poll("acme")
    before = fragment(store).value(ACCOUNT.requests_per_second, side="edge")
    window_end = fragment(store).value(ACCOUNT.window_end)
    assert window_end is not None
    end = int(window_end)
    clock.advance(30)
    await poller.poll("acme")  # no new minute; the settle read is not due yet
    clock.advance(30)
    source.calls.clear()
    await poller.poll("acme")
    assert fragment(store).value(ACCOUNT.window_end) == end + 60  # the newest first read
    rate = fragment(store).value(ACCOUNT.requests_per_second, side="edge")
    first_read = sum(int(truth(r, end)["edge_requests_total"] * 0.7) for r in source.resources)
    assert rate == first_read / 60
    assert rate != before


async def test_an_outage_of_25_minutes_is_backfilled_after_a_1_minute_probe(
    source: FakeSource,
    make_poller: MakePoller,
    clock: FakeClock,
    store: Store,
    metrics: SelfMetrics,
) -> None:
    source.visible = late
    poller = make_poller(revisit_minutes=5)
    await drive(poller, clock, 10 * 60)
    led = poller.accounts.ledger("acme")
    cursor = led.cursor
    counted = counter(store, "edge_requests_total")
    source.fail = UpstreamError("traffic", "http", "Request execution timeout exceeded", 504)
    assert cursor is not None
    back = cursor + 25 * 60 + 60 + 120 + 5  # 25 minutes after the cursor are ready
    while clock.time() < back - 15:
        clock.advance(15)
        with pytest.raises(UpstreamError):
            await poller.poll("acme")
        assert led.cursor == cursor
        assert counter(store, "edge_requests_total") == counted
    source.fail = None
    first = source.calls[0].start
    source.calls.clear()
    clock.set(back)
    await poller.poll("acme")
    totals = [c for c in source.calls if not c.per_resource]
    # The last failure was a 1-minute read (an outage): one minute first, then full windows.
    # The settle read that fell due before the minutes of the third window were ready goes
    # before them (what is owed longest is read first).
    assert [c.minutes for c in totals] == [1, 10, 5, 10, 4]
    assert totals[0].start == cursor + 60
    assert totals[2].start == first + 5 * 60  # the second pre-outage run
    assert windows(metrics, "backfilled") == 25
    await drive(poller, clock, 30 * 60)
    settled, unsettled = split(poller, first)
    for key in COUNTED:
        assert counter(store, key) == expected(source, key, settled, unsettled), key
        for rid in source.resources:
            want = expected(source, key, settled, unsettled, rid)
            assert counter(store, key, rid) == want, (key, rid)
    assert windows(metrics, "missed") == 0


async def test_a_422_for_long_windows_falls_back_to_one_minute_windows(
    source: FakeSource,
    make_poller: MakePoller,
    clock: FakeClock,
    store: Store,
    metrics: SelfMetrics,
    tmp_path: Path,
) -> None:
    source.max_minutes = 1
    source.visible = late
    state_file = str(tmp_path / "traffic.json")
    poller = make_poller(revisit_minutes=3, state_file=state_file)
    await poller.poll("acme")
    first = source.calls[0].start
    clock.advance(12 * 60)
    source.calls.clear()
    await poller.poll("acme")
    reads = [c for c in source.calls if not c.per_resource and c.start != first]
    assert [c.minutes for c in reads] == [10] + [1] * 12  # refused once, then minute by minute
    assert poller.accounts.ledger("acme").long_refused
    assert windows(metrics, "backfilled") == 12
    await drive(poller, clock, 20 * 60)
    assert max(c.minutes for c in source.calls[26:]) == 1  # settle reads too
    settled, unsettled = split(poller, first)
    for key in COUNTED:
        assert counter(store, key) == expected(source, key, settled, unsettled), key
    assert '"long_windows_refused":true' in text_of(state_file)


async def test_a_gap_longer_than_catch_up_counts_missed_minutes(
    source: FakeSource, make_poller: MakePoller, clock: FakeClock, metrics: SelfMetrics
) -> None:
    poller = make_poller(catch_up_minutes=5)
    await poller.poll("acme")
    cursor = poller.accounts.ledger("acme").cursor
    assert cursor is not None
    clock.advance(20 * 60)
    source.calls.clear()
    with capture_logs() as logs:
        await poller.poll("acme")
    assert windows(metrics, "missed") == 14
    assert windows(metrics, "backfilled") == 6
    # (the settle read of the minute at the cursor, due long before, goes first)
    assert min(c.start for c in source.calls if c.start > cursor) == cursor + 15 * 60
    assert any(e["event"] == "traffic_minutes_missed" for e in logs)


async def test_a_failed_request_leaves_cursor_and_counters_unchanged(
    source: FakeSource, make_poller: MakePoller, clock: FakeClock, store: Store
) -> None:
    poller = make_poller()
    await poller.poll("acme")
    led = poller.accounts.ledger("acme")
    cursor, counted = led.cursor, counter(store, "edge_requests_total")
    clock.advance(60)
    source.fail_per_resource = UpstreamError("traffic", "http", "boom", 500)
    with pytest.raises(UpstreamError):
        await poller.poll("acme")
    assert led.cursor == cursor
    assert counter(store, "edge_requests_total") == counted
    source.fail_per_resource = None
    await poller.poll("acme")
    assert cursor is not None
    assert led.cursor == cursor + 60
    want = expected(source, "edge_requests_total", range(cursor, cursor + 120, 60))
    assert counter(store, "edge_requests_total") == want


async def test_unknown_metrics_are_ignored_and_bad_values_fail_the_window(
    source: FakeSource, make_poller: MakePoller, clock: FakeClock, store: Store
) -> None:
    source.extra = {"edge_shiny_new_metric": {"a": "b"}}
    poller = make_poller()
    await poller.poll("acme")
    cursor = poller.accounts.ledger("acme").cursor
    source.extra = {"edge_status_200": "many"}
    clock.advance(60)
    with pytest.raises(UpstreamError, match="edge_status_200"):
        await poller.poll("acme")
    assert poller.accounts.ledger("acme").cursor == cursor
