"""Accounts that move to another replica, and restarts without a state file."""

from __future__ import annotations

import json
from pathlib import Path

from exporter.exposition import Store
from exporter.support.clock import FakeClock
from exporter.traffic.settings import TrafficSettings
from tests.rig.source import COUNTED, FakeSource, MakePoller
from tests.traffic.test_poller import counter, drive


async def test_a_moved_account_is_kept_for_the_retention_then_dropped(
    source: FakeSource, make_poller: MakePoller, clock: FakeClock, store: Store, tmp_path: Path
) -> None:
    path = tmp_path / "traffic.json"
    poller = make_poller(state_file=str(path), series_retention_hours=1, revisit_minutes=0)
    poller.accounts.serve(["acme", "other"])
    await poller.poll("acme")
    first = poller.accounts.ledger("acme").cursor
    assert first is not None
    await drive(poller, clock, 5 * 60)
    before = {key: counter(store, key) for key in COUNTED}
    cursor = poller.accounts.ledger("acme").cursor
    assert cursor is not None
    poller.accounts.serve(["other"])  # acme moved to another replica
    clock.advance(20 * 60)
    await poller.poll("other")  # saves the state: acme is still in it, released
    saved = json.loads(path.read_bytes())["accounts"]["acme"]
    assert saved["cursor"] == cursor
    assert saved["released_at"] > 0
    # It comes back within the retention: its counters continue, the 20 minutes the other
    # replica read are not read again here, the newest minute is.
    poller.accounts.serve(["acme", "other"])
    source.calls.clear()
    await poller.poll("acme")
    led = poller.accounts.ledger("acme")
    assert led.cursor is not None
    assert [(c.start, c.minutes) for c in source.calls if not c.per_resource] == [(led.cursor, 1)]
    await drive(poller, clock, 15)
    for key in COUNTED:
        assert counter(store, key) == (before[key] or 0) + source.final(key, [led.cursor]), key
    # Moved again, and not back within the retention: dropped, also from the state file.
    poller.accounts.serve(["other"])
    clock.advance(3600 + 60)
    await poller.poll("other")
    assert "acme" not in json.loads(path.read_bytes())["accounts"]
    assert poller.accounts.ledger("acme").cursor is None  # a fresh ledger if it ever comes back


async def test_a_restart_without_a_state_file_reads_the_newest_minute_only(
    source: FakeSource, make_poller: MakePoller, clock: FakeClock
) -> None:
    poller = make_poller(catch_up_minutes=60)
    await poller.poll("acme")
    assert [c.minutes for c in source.calls if not c.per_resource] == [1]
    doc = TrafficSettings.__dataclass_fields__["state_file"].metadata["doc"]
    assert "newest minute" in doc
    assert "re-reads at most" not in doc
