"""The state file is saved before the counters that depend on it are published."""

from __future__ import annotations

from pathlib import Path

from exporter.exposition import Store, StoreKey
from exporter.runtime.selfmetrics import SelfMetrics
from exporter.support.clock import FakeClock
from tests.rig.source import COUNTED, FakeSource, MakePoller
from tests.traffic.logcapture import capture_logs
from tests.traffic.test_poller import counter, drive, windows


def sample(metrics: SelfMetrics, name: str) -> float | None:
    return metrics.registry.get_sample_value(name)


async def test_counters_wait_for_the_save_and_a_failed_save_is_visible(
    source: FakeSource,
    make_poller: MakePoller,
    clock: FakeClock,
    store: Store,
    metrics: SelfMetrics,
    tmp_path: Path,
) -> None:
    folder = tmp_path / "state"
    folder.mkdir()
    path = str(folder / "traffic.json")
    poller = make_poller(state_file=path)
    await drive(poller, clock, 60)
    saved_at = sample(metrics, "cdnvideo_state_last_save_timestamp_seconds")
    assert saved_at is not None
    assert clock.time() - 60 <= saved_at < clock.time()
    on_disk = {key: counter(store, key) for key in COUNTED}
    assert on_disk["edge_requests_total"]
    folder.rename(tmp_path / "away")  # from now on every save fails
    with capture_logs() as logs:
        await drive(poller, clock, 3 * 60)
    assert poller.accounts.ledger("acme").cursor is not None
    assert {key: counter(store, key) for key in COUNTED} == on_disk  # nothing unsaved shown
    assert sample(metrics, "cdnvideo_state_save_failures_total") == 12
    assert sample(metrics, "cdnvideo_state_last_save_timestamp_seconds") == saved_at
    failed = [e for e in logs if e["event"] == "traffic_state_save_failed"]
    assert len(failed) == 1  # rate-limited
    assert failed[0]["path"] == path
    (tmp_path / "away").rename(folder)
    await drive(poller, clock, 15)
    assert sample(metrics, "cdnvideo_state_last_save_timestamp_seconds") == clock.time() - 15
    published = {key: counter(store, key) for key in COUNTED}
    assert published["edge_requests_total"] > on_disk["edge_requests_total"]  # type: ignore[operator]
    restarted = make_poller(state_file=path, delay_seconds=86_400)  # nothing new to read
    store.drop(StoreKey("traffic", "acme"))
    await restarted.poll("acme")
    assert {key: counter(store, key) for key in COUNTED} == published


async def test_without_any_snapshot_on_disk_a_failing_save_holds_nothing_back(
    source: FakeSource,
    make_poller: MakePoller,
    clock: FakeClock,
    store: Store,
    metrics: SelfMetrics,
    tmp_path: Path,
) -> None:
    """A state path that never worked (a restart would start afresh, a clean counter reset):
    the counters are published, the failures counted."""
    path = str(tmp_path / "missing" / "traffic.json")
    poller = make_poller(state_file=path)
    await drive(poller, clock, 60)
    assert counter(store, "edge_requests_total")
    assert sample(metrics, "cdnvideo_state_save_failures_total") == 4


async def test_a_restart_after_a_long_downtime_continues_the_counters_and_counts_the_gap(
    source: FakeSource,
    make_poller: MakePoller,
    clock: FakeClock,
    store: Store,
    metrics: SelfMetrics,
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "traffic.json")
    before = make_poller(state_file=path, catch_up_minutes=30)
    await drive(before, clock, 5 * 60)
    cursor = before.accounts.ledger("acme").cursor
    assert cursor is not None
    was = {key: counter(store, key) for key in COUNTED}
    clock.advance(3 * 3600)  # down for three hours
    after = make_poller(state_file=path, catch_up_minutes=30)
    await after.poll("acme")
    now_cursor = after.accounts.ledger("acme").cursor
    assert now_cursor is not None
    gap = (now_cursor - cursor) // 60
    # The oldest minute owed is read first (the probe of a clock not yet confirmed: surely
    # closed on the platform's), then, on the confirmed clock, the newest minute and the 30
    # before it; what lies between is missed.
    assert windows(metrics, "missed") == gap - 32
    read = [cursor + 60, *range(now_cursor - 30 * 60, now_cursor + 60, 60)]
    for key in COUNTED:
        assert counter(store, key) == (was[key] or 0) + source.final(key, read), key
