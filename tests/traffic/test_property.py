"""Property: whatever the outages, window limit and revisit, counters end at the final truth."""

from __future__ import annotations

import asyncio
import dataclasses
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from exporter.exposition import Store, StoreKey
from exporter.runtime.selfmetrics import SelfMetrics
from exporter.support.clock import FakeClock
from exporter.traffic import TrafficPoller
from exporter.traffic.families import ACCOUNT
from exporter.traffic.settings import TrafficSettings
from exporter.upstream.errors import UpstreamError
from tests.rig.source import COUNTED, T0, FakeSource
from tests.traffic.test_poller import counter, late
from tests.traffic.test_poller_state import first_read_minutes

Step = tuple[int, bool]  # (seconds to advance before the poll, the upstream fails)
steps = st.lists(
    st.tuples(st.sampled_from([5, 15, 15, 15, 60, 240, 900]), st.booleans()),
    min_size=5,
    max_size=40,
)


async def scenario(
    plan: list[Step], max_minutes: int, revisit: int, catch_up: int, state_dir: str
) -> None:
    clock = FakeClock(T0 + 3600 + 7)
    source = FakeSource(clock.time, max_minutes=max_minutes, visible=late)
    store, metrics = Store(clock), SelfMetrics()
    path = str(Path(state_dir) / "traffic.json")

    base = TrafficSettings(
        delay_seconds=120, revisit_minutes=revisit, catch_up_minutes=catch_up, state_file=path
    )

    def poller(delay_seconds: int = 120) -> TrafficPoller:
        s = dataclasses.replace(base, delay_seconds=delay_seconds)
        return TrafficPoller(source, store, metrics, clock, s)

    def edge_requests() -> float:
        f = store.fragment(StoreKey("traffic", "acme"), include_stale=True)
        return (f.value(ACCOUNT.requests_total, side="edge") if f else None) or 0.0

    live = poller()
    seen = 0.0
    for advance, fails in plan:
        clock.advance(advance)
        source.fail = UpstreamError("traffic", "http", "down", 504) if fails else None
        try:
            await live.poll("acme")
        except UpstreamError:
            assert fails
        now = edge_requests()
        assert now >= seen  # a counter never goes down
        seen = now
    source.fail = None
    drain = poller(delay_seconds=10**6)  # restart; no minute becomes ready any more
    for _ in range(400):
        if not drain.accounts.ledger("acme").pending:
            break
        clock.advance(15)
        await drain.poll("acme")
    assert not drain.accounts.ledger("acme").pending
    minutes = first_read_minutes(source)
    assert len(minutes) == len(set(minutes))
    f = store.fragment(StoreKey("traffic", "acme"), include_stale=True)
    if f is None:  # nothing was ever read
        assert not minutes
        return
    for key in COUNTED:
        assert counter(store, key) == source.final(key, minutes), key
        for rid in source.resources:
            assert counter(store, key, rid) == source.final(key, minutes, rid), (key, rid)


@settings(max_examples=40, deadline=None)
@given(
    plan=steps,
    max_minutes=st.sampled_from([1, 10]),
    revisit=st.integers(2, 6),
    catch_up=st.sampled_from([0, 3, 60]),
)
def test_counters_end_at_the_final_truth_of_every_minute_read(
    plan: list[Step], max_minutes: int, revisit: int, catch_up: int
) -> None:
    with tempfile.TemporaryDirectory() as state_dir:
        asyncio.run(scenario(plan, max_minutes, revisit, catch_up, state_dir))
