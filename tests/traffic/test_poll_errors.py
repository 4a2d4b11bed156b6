"""A failed poll raises its own error, whatever happens while what it counted is published."""

from __future__ import annotations

import pytest

from exporter.exposition import Fragment, Store, StoreKey
from exporter.support.clock import FakeClock
from exporter.traffic.settings import TrafficSettings
from exporter.upstream.errors import UpstreamError
from tests.rig.source import FakeSource, MakePoller
from tests.traffic.logcapture import capture_logs


class BrokenStore(Store):
    """A store whose publish fails (as a listener that raises would make it)."""

    def publish(self, key: StoreKey, fragment: Fragment, max_age: float | None = None) -> None:
        raise RuntimeError("publish failed")


async def test_the_poll_error_propagates_unchanged_when_publishing_fails_too(
    source: FakeSource, clock: FakeClock, make_poller: MakePoller
) -> None:
    poller = make_poller()
    poller.publisher.store = BrokenStore(clock)
    poller.accounts.ledger("acme").dirty = True  # something to publish even though the poll fails
    source.fail = UpstreamError("traffic", "http", "boom", 500)
    with capture_logs() as logs, pytest.raises(UpstreamError) as raised:
        await poller.poll("acme")
    assert raised.value is source.fail
    failed = [e for e in logs if e["event"] == "traffic_publish_failed"]
    assert failed == [
        {
            "event": "traffic_publish_failed",
            "log_level": "error",
            "account": "acme",
            "error": "RuntimeError: publish failed",
            "poll_error": "UpstreamError",
        }
    ]


async def test_a_publish_failure_after_a_good_poll_is_the_poll_error(
    clock: FakeClock, make_poller: MakePoller
) -> None:
    poller = make_poller()
    poller.publisher.store = BrokenStore(clock)
    with pytest.raises(RuntimeError, match="publish failed"):
        await poller.poll("acme")


async def test_forget_keeps_the_released_ledger_and_drops_the_rest(
    store: Store, clock: FakeClock, make_poller: MakePoller
) -> None:
    poller = make_poller()
    await poller.poll("acme")
    before = poller.accounts.get("acme")
    assert before is not None
    assert before.latest is not None
    assert before.fragment is not None
    poller.accounts.forget("acme")
    after = poller.accounts.get("acme")
    assert after is not None
    assert after.ledger is before.ledger
    assert after.ledger.released_at == clock.time()
    assert (after.latest, after.fragment) == (None, None)
    clock.advance(TrafficSettings().series_retention_hours * 3600 + 1)
    poller.accounts.serve(())
    assert poller.accounts.get("acme") is None
