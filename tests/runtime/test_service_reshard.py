"""An account moved to another replica and back: nothing of it stays, its metrics return right.

The daemon is started by the rig (tests/rig/daemon.py) and polls the simulator over HTTP on a
fake clock.
"""

from __future__ import annotations

import functools
import gc
import tracemalloc
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from dataclasses import dataclass

import pytest
from prometheus_client.parser import text_string_to_metric_families

from exporter.config import parse_config
from exporter.dvr.area import DvrArea
from exporter.exposition.deflate import clear_caches
from exporter.restream.area import RestreamArea
from exporter.runtime.service import Service
from exporter.simulator import SimConfig, Simulator, serve
from exporter.simulator.config import account_names
from exporter.support.clock import FakeClock
from exporter.talking_head.area import TalkingHeadArea
from exporter.traffic.area import TrafficArea
from exporter.traffic.settings import TRAFFIC_SECTION
from tests.rig.daemon import running

T0 = 1_767_225_600 + 12 * 3600  # 2026-01-01T12:00:00Z
STREAMS = ("live/main", "news")
NAMES = account_names(8)
MOVED, STAYS = NAMES[0], NAMES[1]
AREAS = ("traffic", "restream", "dvr", "talking_head")

Series = dict[tuple[str, tuple[tuple[str, str], ...]], float]


@dataclass
class Daemon:
    service: Service
    clock: FakeClock

    async def poll(self, *accounts: str) -> None:
        """Every job of these accounts once, as the scheduler would run them; then a scrape,
        as Prometheus reads /metrics between two polls (a new counter series is held at 0
        until a scrape was answered with it)."""
        ctx = self.service.ctx
        for account in accounts:
            for job in self.service.jobs(account):
                await ctx.runner.run(job.area, account, job.poll, job.name)
        ctx.store.mark_served(ctx.store.render_sync())

    def series(self, account: str) -> Series:
        """The account's series in the rendered /metrics (self-metrics included)."""
        text = self.service.ctx.store.render_sync().plain.decode()
        out: Series = {}
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                if s.labels.get("account") == account:
                    out[(s.name, tuple(sorted(s.labels.items())))] = s.value
        return out

    def kept(self, account: str) -> dict[str, bool]:
        """Which parts still keep something of ``account``."""
        areas = self.service.areas
        traffic = areas.get(TrafficArea)
        state = traffic.poller.accounts.get(account)
        th = areas.get(TalkingHeadArea)
        ctx = self.service.ctx
        return {
            # a released ledger alone is what traffic keeps by design (see below)
            "traffic poller": state is not None
            and (not state.ledger.released_at or (state.latest, state.fragment) != (None, None)),
            "traffic history": bool(traffic.history.points(account)),
            "traffic audit": traffic.auditor.knows(account),
            "restream poller": areas.get(RestreamArea).poller.knows(account),
            "dvr poller": areas.get(DvrArea).poller.knows(account),
            "talking-head poller": th.poller.latest_configurations(account) is not None,
            "task tracker": th.tracker.knows(account),
            "store": account in {k.account for k in ctx.store.keys()},  # noqa: SIM118
            "scheduler": any(k.account == account for k in self.service.scheduler.jobs()),
            "poll runner": any(ctx.runner.healthy(a, account) is not None for a in AREAS),
            "request budget": account in ctx.client.budget.accounts(),
        }


class Daemons:
    """Daemons started by the rig (tests/rig/daemon.py), polling one simulator on one fake clock."""

    def __init__(self) -> None:
        self.clock = FakeClock(T0)
        self.sim = Simulator(SimConfig(accounts=NAMES), self.clock)
        self._stack = AsyncExitStack()  # the daemons stop first, then the simulator
        self._url = ""

    async def start(self) -> Daemon:
        if not self._url:
            sim_runner = await serve(self.sim, "127.0.0.1", 0)
            self._stack.push_async_callback(sim_runner.cleanup)
            self._url = sim_runner.base_url
        settings = parse_config(
            {
                "upstream": {
                    "base_url": self._url,
                    "token": self.sim.token,
                    "max_requests_per_minute": 600,
                },
                "accounts": [{"name": a, "dvr_streams": list(STREAMS)} for a in NAMES],
                "traffic": {"delay_seconds": 120, "series_retention_hours": 1},
            },
            env={},
        )
        started = await self._stack.enter_async_context(running(settings, self.clock))
        return Daemon(started.service, self.clock)

    async def close(self) -> None:
        await self._stack.aclose()


@pytest.fixture
async def daemons() -> AsyncIterator[Daemons]:
    made = Daemons()
    try:
        yield made
    finally:
        await made.close()


@pytest.fixture
async def daemon(daemons: Daemons) -> Daemon:
    return await daemons.start()


async def test_an_account_moved_away_leaves_nothing_and_comes_back_right(
    daemons: Daemons,
) -> None:
    daemon = await daemons.start()
    service = daemon.service
    service.serve_accounts((MOVED, STAYS))
    for _ in range(3):
        await daemon.poll(MOVED, STAYS)
        daemon.clock.advance(60)
    service.areas.talking_head.tracker.track(MOVED, "task-1")
    before = daemon.series(MOVED)
    up = {dict(labels)["area"]: v for (name, labels), v in before.items() if name == "cdnvideo_up"}
    assert up == dict.fromkeys(AREAS, 1.0)
    assert all(daemon.kept(MOVED).values()), daemon.kept(MOVED)

    owed = sum(run.minutes for run in service.areas.traffic.poller.accounts.ledger(MOVED).pending)
    assert owed > 0
    service.serve_accounts((STAYS,))
    assert daemon.kept(MOVED) == dict.fromkeys(daemon.kept(MOVED), False)
    # Its series leave, the released count of the minutes it left owed a settle read with them
    # (the log line `traffic_settle_released` names those; tests/traffic/test_settle_edges.py)
    assert daemon.series(MOVED) == {}
    assert any(daemon.kept(STAYS).values())  # the other account is untouched
    # Traffic keeps the moved account's ledger, released, for series_retention_hours (so its
    # counters continue should it come back); nothing else of it.
    state = service.areas.traffic.poller.accounts.get(MOVED)
    assert state is not None
    assert state.ledger.released_at == daemon.clock.time()

    daemon.clock.advance(60)
    service.serve_accounts((MOVED, STAYS))
    fresh = await daemons.start()  # the reference: a replica that never saw the account
    fresh.service.serve_accounts((MOVED,))
    for _ in range(2):
        await daemon.poll(MOVED)
        await fresh.poll(MOVED)
        daemon.clock.advance(60)
    after, expected = daemon.series(MOVED), fresh.series(MOVED)
    for area in AREAS:
        assert after[("cdnvideo_up", (("account", MOVED), ("area", area)))] == 1.0
    # Restream, DVR, talking head and the self-metrics: exactly what a fresh replica shows
    # (the next poll's time too, but its value is where each daemon's jittered schedule fell).
    continued = ("cdnvideo_account_", "cdnvideo_resource_", "cdnvideo_traffic_")
    scheduled = "cdnvideo_next_poll_timestamp_seconds"
    assert {k: v for k, v in after.items() if not k[0].startswith((*continued, scheduled))} == {
        k: v for k, v in expected.items() if not k[0].startswith((*continued, scheduled))
    }
    assert {k for k in after if k[0] == scheduled} == {k for k in expected if k[0] == scheduled}
    audit = "cdnvideo_traffic_audit_seconds_total"  # the audit starts again on this replica
    assert (
        {k: v for k, v in after.items() if k[0] == audit}
        == {k: v for k, v in expected.items() if k[0] == audit}
        != {}
    )
    # Traffic: the counters continue from before the move (no reset), as designed.
    requests = ("cdnvideo_account_requests_total", (("account", MOVED), ("side", "edge")))
    assert after[requests] >= before[requests] > 0
    assert {k for k in after if k[0].startswith(continued)} >= {
        k for k in expected if k[0].startswith("cdnvideo_account_")
    }


def per_account_entries(daemon: Daemon) -> int:
    """How many accounts the pollers, caches and trackers keep something of."""
    return sum(sum(daemon.kept(a).values()) for a in NAMES)


def clear_bounded_caches() -> None:
    """Empty every bounded cache of the exporter (the CRC caches and each ``lru_cache``):
    what earlier tests in the same process left in them fills up during the measured rounds
    and would read as growth, though a cache is bounded, not state kept per account."""
    clear_caches()
    for obj in gc.get_objects():
        if isinstance(obj, functools._lru_cache_wrapper) and getattr(
            obj, "__module__", ""
        ).startswith("exporter."):
            obj.cache_clear()


@pytest.mark.slow
async def test_many_moves_leave_no_state_and_no_memory_behind(daemon: Daemon) -> None:
    service = daemon.service
    retention = TRAFFIC_SECTION.of(service.ctx.settings).series_retention_hours * 3600

    async def cycle(i: int) -> None:
        served = (NAMES[i % len(NAMES)], NAMES[(i + 1) % len(NAMES)])
        service.serve_accounts(served)
        await daemon.poll(*served)
        daemon.clock.advance(retention + 60)  # released traffic ledgers expire

    async def snapshot() -> tracemalloc.Snapshot:
        # what a render holds (its pieces) is what the current two accounts need, not history
        await service.ctx.store.render()
        clear_bounded_caches()  # bounded caches, not state kept per account
        gc.collect()
        return tracemalloc.take_snapshot()

    # What the exporter (not the simulator, whose request log grows) and its metrics library
    # hold beyond what they held at the window's start.
    kept = [
        tracemalloc.Filter(True, "*/exporter/*"),
        tracemalloc.Filter(True, "*/prometheus_client/*"),
        tracemalloc.Filter(False, "*/exporter/simulator/*"),
    ]
    tracemalloc.start()
    try:
        # every account served and moved away three times: what fills once in a process (a
        # table resized, a cache at its bound) is full before the measured rounds
        for i in range(3 * len(NAMES)):
            await cycle(i)
        first = await snapshot()
        entries = per_account_entries(daemon)
        # A leak grows in every window of moves; what fills once (after other tests in the
        # same process) grows in one. A second window is measured when the first grew.
        windows: list[int] = []
        for _ in range(2):
            for i in range(2 * len(NAMES)):
                await cycle(i)
            last = await snapshot()
            diff = last.filter_traces(kept).compare_to(first.filter_traces(kept), "filename")
            windows.append(sum(d.size_diff for d in diff))
            if windows[-1] < 64 * 1024:
                break
            first = last
    finally:
        tracemalloc.stop()
    served = {a for a in NAMES if any(daemon.kept(a).values())}
    assert len(served) == 2  # only the two served now are known anywhere
    assert per_account_entries(daemon) == entries
    print(f"exporter memory grew by {windows} bytes over windows of {2 * len(NAMES)} moves")
    assert windows[-1] < 64 * 1024, f"grew by {windows} bytes over {2 * len(NAMES)} moves each"
