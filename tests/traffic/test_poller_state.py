"""The poller across restarts (state file), and the series it keeps, folds and removes."""

from __future__ import annotations

from pathlib import Path

from exporter.exposition import Store
from exporter.runtime.selfmetrics import SelfMetrics
from exporter.support.clock import FakeClock
from exporter.traffic.families import ACCOUNT, RESOURCE, RESOURCE_INFO
from tests.rig.source import COUNTED, FakeSource, MakePoller
from tests.traffic.logcapture import capture_logs
from tests.traffic.test_poller import counter, drive, expected, fragment, late, split


async def test_a_restart_with_the_state_file_resumes_exactly(
    source: FakeSource, make_poller: MakePoller, clock: FakeClock, store: Store, tmp_path: Path
) -> None:
    source.visible = late
    path = str(tmp_path / "traffic.json")
    before = make_poller(state_file=path)
    await drive(before, clock, 12 * 60)
    first = source.calls[0].start
    assert before.accounts.ledger("acme").pending  # unsettled runs go into the file too
    clock.advance(7 * 60)  # down for 7 minutes
    after = make_poller(state_file=path)
    await drive(after, clock, 25 * 60)
    cursor = after.accounts.ledger("acme").cursor
    assert cursor is not None
    assert first_read_minutes(source) == list(range(first, cursor + 60, 60))
    settled, unsettled = split(after, first)
    for key in COUNTED:
        assert counter(store, key) == expected(source, key, settled, unsettled), key
        for rid in source.resources:
            assert counter(store, key, rid) == expected(source, key, settled, unsettled, rid)


def first_read_minutes(source: FakeSource) -> list[int]:
    """Minutes in the order first read; each answered request is all new or all re-read."""
    seen: list[int] = []
    for c in source.calls:
        if c.per_resource or not c.ok:
            continue
        minutes = range(c.start, c.end, 60)
        fresh = [m for m in minutes if m not in seen]
        assert len(fresh) in (0, len(minutes)), c
        seen.extend(fresh)
    return seen


async def test_a_corrupt_state_file_is_ignored_with_a_warning(
    source: FakeSource, make_poller: MakePoller, clock: FakeClock, tmp_path: Path
) -> None:
    path = tmp_path / "traffic.json"
    path.write_text('{"version": 1, "accounts": {"acme": {"cursor": 17')
    # no saved_at nor cursor to read: nothing says where it left off
    # (tests/traffic/test_state_lost.py reads on from a file that does)
    with capture_logs() as logs:
        poller = make_poller(state_file=str(path))
        await poller.poll("acme")
    warning = next(e for e in logs if e["event"] == "traffic_state_ignored")
    assert warning["path"] == str(path)
    assert "not JSON" in warning["problem"]
    lost = next(e for e in logs if e["event"] == "traffic_state_lost")
    assert lost["effect"] == "the minutes since the file's save are neither read nor counted"
    assert len(source.calls) == 2  # a fresh start: only the newest ready minute
    assert '"version":1' in path.read_text()  # replaced by a good file


async def test_top_n_keeps_the_biggest_resources_and_sums_the_rest(
    source: FakeSource,
    make_poller: MakePoller,
    clock: FakeClock,
    store: Store,
    metrics: SelfMetrics,
) -> None:
    poller = make_poller(max_resources=1)
    await drive(poller, clock, 10 * 60)
    f = fragment(store)
    named = {v[1] for v, _ in f.samples[RESOURCE.requests_total]}
    assert named == {"r3", "__other__"}  # r3 has the most edge traffic in the fake
    total = f.value(ACCOUNT.requests_total, side="edge")
    parts = sum(val for v, val in f.samples[RESOURCE.requests_total] if v[-1] == "edge")
    assert parts == total
    bw = f.value(RESOURCE.bandwidth, resource="__other__", side="edge")
    assert bw is not None
    assert bw > 0
    assert metrics.registry.get_sample_value("cdnvideo_series_dropped_total") == 2


async def test_include_and_exclude_shape_resource_series_not_account_totals(
    source: FakeSource, make_poller: MakePoller, clock: FakeClock, store: Store
) -> None:
    poller = make_poller(resources_include="^(www|img)$", resources_exclude="^r2$")
    await drive(poller, clock, 3 * 60)
    f = fragment(store)
    assert {v[1] for v, _ in f.samples[RESOURCE.requests_total]} == {"r1"}
    first = source.calls[0].start
    cursor = poller.accounts.ledger("acme").cursor
    assert cursor is not None
    want = expected(source, "edge_requests_total", range(first, cursor + 60, 60))
    assert f.value(ACCOUNT.requests_total, side="edge") == want  # all three resources


async def test_a_quiet_resource_keeps_its_counter_for_the_retention_and_continues_it(
    source: FakeSource, make_poller: MakePoller, clock: FakeClock, store: Store
) -> None:
    start = int(clock.time()) // 60 * 60
    quiet = range(start - 60, start + 10 * 60)  # r2 sends nothing for 11 minutes
    source.present = lambda rid, m: rid != "r2" or m not in quiet
    poller = make_poller(revisit_minutes=3, series_retention_hours=0.5)
    await poller.poll("acme")
    first = poller.accounts.ledger("acme").cursor
    assert first is not None
    await drive(poller, clock, 5 * 60)
    f = fragment(store)
    assert f.value(RESOURCE.requests_per_second, resource="r2") is None  # no gauges
    before = f.value(RESOURCE.requests_total, resource="r2", side="edge")
    assert before == source.final("edge_requests_total", range(first, start - 60, 60), "r2")
    assert f.value(RESOURCE_INFO, resource="r2", resource_name="img") == 1
    await drive(poller, clock, 10 * 60)  # r2 is back: its counter continues
    cursor = poller.accounts.ledger("acme").cursor
    assert cursor is not None
    after = fragment(store).value(RESOURCE.requests_total, resource="r2", side="edge")
    assert after == source.final("edge_requests_total", range(first, cursor + 60, 60), "r2")
    assert after is not None
    assert before is not None
    assert after > before
    source.present = lambda rid, m: rid != "r2" or m < cursor  # gone for good
    await drive(poller, clock, 25 * 60)
    assert fragment(store).value(RESOURCE.requests_total, resource="r2", side="edge") == after
    await drive(poller, clock, 10 * 60)  # last seen more than half an hour ago
    f = fragment(store)
    assert f.value(RESOURCE.requests_total, resource="r2", side="edge") is None
    assert f.value(RESOURCE_INFO, resource="r2") is None
    assert f.value(RESOURCE.requests_total, resource="r1", side="edge") is not None


async def test_revisit_zero_and_no_retention_drop_vanished_series_at_once(
    source: FakeSource, make_poller: MakePoller, clock: FakeClock, store: Store
) -> None:
    gone_at = int(clock.time()) // 60 * 60 + 120
    source.present = lambda rid, m: rid != "r2" or m < gone_at
    poller = make_poller(revisit_minutes=0, series_retention_hours=0)
    await drive(poller, clock, 10 * 60)
    assert all(c.minutes == 1 for c in source.calls)
    assert len(source.calls) == 2 * 10
    assert fragment(store).value(RESOURCE.requests_total, resource="r2") is None
    assert poller.accounts.ledger("acme").pending == []


async def test_per_resource_off_costs_one_request_a_minute(
    source: FakeSource, make_poller: MakePoller, clock: FakeClock, store: Store
) -> None:
    poller = make_poller(per_resource=False, revisit_minutes=0)
    await drive(poller, clock, 10 * 60)
    assert len(source.calls) == 10
    assert not any(c.per_resource for c in source.calls)
    assert fragment(store).samples[RESOURCE.requests_total] == ()


async def test_lag_is_the_age_of_the_last_accounted_minute(
    source: FakeSource, make_poller: MakePoller, clock: FakeClock, metrics: SelfMetrics
) -> None:
    poller = make_poller()
    await poller.poll("acme")
    cursor = poller.accounts.ledger("acme").cursor
    assert cursor is not None
    lag = metrics.registry.get_sample_value("cdnvideo_traffic_lag_seconds", {"account": "acme"})
    assert lag == clock.time() - (cursor + 60)
    assert (
        metrics.registry.get_sample_value(
            "cdnvideo_traffic_windows_total", {"account": "acme", "outcome": "read"}
        )
        == 1
    )
