"""The traffic poller against the simulator over real HTTP: late data, an outage, a restart.

Every counter (account and resource, every side and code, hit bytes, bytes delivered) must equal the
simulator's final per-minute truth summed over the accounted minutes: none missing, none twice.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestServer

from exporter.config import UpstreamSettings
from exporter.exposition import Fragment, Store, StoreKey
from exporter.runtime.selfmetrics import SelfMetrics
from exporter.simulator import SimConfig, Simulator
from exporter.support.clock import FakeClock
from exporter.traffic import TrafficPoller
from exporter.traffic.families import ACCOUNT, RESOURCE, Families
from exporter.traffic.parse import COUNT_KEYS
from exporter.traffic.reply import MetricsEndpoint, TrafficSource
from exporter.traffic.settings import TrafficSettings
from exporter.upstream import UpstreamClient, UpstreamError
from tests.traffic.logcapture import capture_logs

T0 = 1_767_225_600 + 17 * 3600 + 5  # 2026-01-01T17:00:05Z, near the daily peak
ACC = "demo-media"
ServerFactory = Callable[..., Awaitable[TestServer]]


@dataclass
class Rig:
    sim: Simulator
    clock: FakeClock
    store: Store
    metrics: SelfMetrics
    client: UpstreamClient
    url: str = ""  # the simulator's base URL
    source: TrafficSource | None = None  # the metrics endpoint over ``client`` unless set

    def poller(self, **settings: Any) -> TrafficPoller:
        s = TrafficSettings(**{"delay_seconds": 120, "revisit_minutes": 5, **settings})
        source = self.source or MetricsEndpoint(self.client)
        return TrafficPoller(
            source, self.store, self.metrics, self.clock, s, budget=self.client.budget
        )

    async def drive(
        self, poller: TrafficPoller, seconds: float, fails: bool = False, step: float = 15
    ) -> None:
        end = self.clock.time() + seconds
        while self.clock.time() < end:
            if fails:
                with pytest.raises(UpstreamError):
                    await poller.poll(ACC)
            else:
                await poller.poll(ACC)
            self.scrape()
            self.clock.advance(step)

    def scrape(self) -> None:
        """What Prometheus does between two polls (every 15 s): read ``/metrics``; a new
        series held at 0 shows its count from the next refresh on."""
        self.store.mark_served(self.store.render_sync())

    def fragment(self) -> Fragment:
        """The account's fragment as a scrape reads it now (the scrape is answered)."""
        f = self.store.fragment(StoreKey("traffic", ACC), include_stale=True)
        assert f is not None
        self.scrape()
        return f

    def windows(self, outcome: str) -> float:
        labels = {"account": ACC, "outcome": outcome}
        return self.metrics.registry.get_sample_value("cdnvideo_traffic_windows_total", labels) or 0


@asynccontextmanager
async def rig(
    server_factory: ServerFactory, config: SimConfig, budget: int = 0
) -> AsyncIterator[Rig]:
    """The simulator over HTTP and a client on one FakeClock; ``budget`` is the client's
    ``upstream.max_requests_per_minute``."""
    clock = FakeClock(T0)
    sim = Simulator(config, clock)
    server = await server_factory(sim.build_app(), host="127.0.0.1", port=0)
    metrics = SelfMetrics()
    async with aiohttp.ClientSession() as session:
        settings = UpstreamSettings(
            base_url=str(server.make_url("/")), token=sim.token, max_requests_per_minute=budget
        )
        client = UpstreamClient(session, settings, metrics, clock, retries=0)
        yield Rig(sim, clock, Store(clock), metrics, client, settings.base_url)


def counter(f: Fragment, key: str, resource: str | None = None) -> float | None:
    fam: Families = RESOURCE if resource else ACCOUNT
    labels = {"account": ACC} | ({"resource": resource} if resource else {})
    side = key.split("_", 1)[0]
    if key.endswith("_requests_total"):
        return f.value(fam.requests_total, side=side, **labels)
    if "_status_" in key:
        code = key.rpartition("_status_")[2]
        if code.endswith("xx"):  # the platform's class keys have their own family
            return f.value(fam.responses_by_class_total, side=side, **labels, **{"class": code})
        return f.value(fam.responses_total, side=side, code=code, **labels)
    if key.endswith("_transferred_bytes"):
        return f.value(fam.transferred_bytes_total, side=side, **labels)
    assert key == "edge_hit_bytes"
    return f.value(fam.edge_hit_bytes_total, **labels)


Unreadable = frozenset[tuple[str, str]]  # (resource, counted key) the platform never sent


def assert_counters_equal_truth(
    r: Rig, minutes: range, unreadable: Unreadable = frozenset()
) -> int:
    """Compare every counter with the final truth (one in ``unreadable`` is never exported);
    returns how many series were compared."""
    f = r.fragment()
    finals = {m: r.sim.traffic_truth(ACC, m) for m in minutes}
    compared = 0
    for key in COUNT_KEYS:
        assert counter(f, key) == sum(finals[m][key] for m in minutes), key
        compared += 1
    for res in r.sim.resources(ACC):
        per = {m: r.sim.traffic_truth(ACC, m, res.id) for m in minutes}
        for key in COUNT_KEYS:
            want = None if (res.id, key) in unreadable else sum(per[m][key] for m in minutes)
            assert counter(f, key, res.id) == want, (res.id, key)
            compared += 1
    return compared


async def drain(r: Rig, state_file: str, **settings: Any) -> TrafficPoller:
    """Restart from the state file with a delay so long that no new minute is ready, and poll
    until every unsettled run has had its settle reads (a poll the platform's rate limit
    refused is tried again at the next)."""
    poller = r.poller(state_file=state_file, delay_seconds=86_400, **settings)
    for _ in range(400):
        if not poller.accounts.ledger(ACC).pending:
            break
        try:
            await poller.poll(ACC)
        except UpstreamError as exc:
            if not exc.rate_limited:
                raise
        r.clock.advance(15)
    assert poller.accounts.ledger(ACC).pending == []
    return poller


async def start_and_drive(
    r: Rig, poller: TrafficPoller, seconds: float
) -> tuple[int, list[MutableMapping[str, Any]]]:
    """Poll once, then drive for ``seconds``; returns the first minute read and the log."""
    with capture_logs() as logs:
        await poller.poll(ACC)
        first = poller.accounts.ledger(ACC).cursor
        assert first is not None
        await r.drive(poller, seconds)
    return first, logs


def traffic_requests(r: Rig) -> float:
    return sum(
        s.value
        for metric in r.metrics.registry.collect()
        if metric.name == "cdnvideo_upstream_requests"
        for s in metric.samples
        if s.name.endswith("_total") and s.labels["area"] == "traffic"
    )


async def test_counters_equal_final_truth_across_late_data_an_outage_and_a_restart(
    aiohttp_server: ServerFactory, tmp_path: Path
) -> None:
    config = SimConfig(late_seconds=240, resources_per_account=8)
    state_file = str(tmp_path / "traffic.json")
    async with rig(aiohttp_server, config) as r:
        poller = r.poller(state_file=state_file)
        await r.drive(poller, 20 * 60)
        first = poller.accounts.ledger(ACC).cursor - 19 * 60  # type: ignore[operator]
        steady = traffic_requests(r)
        assert steady == 2 * 20 + 2 * 3  # a pair per minute + a settle pair per 5 minutes
        r.sim.faults.set("traffic", "504")
        await r.drive(poller, 17 * 60, fails=True)
        r.sim.faults.clear("traffic")
        await r.drive(poller, 25 * 60)
        assert r.windows("backfilled") >= 17
        assert r.windows("revised") > 0  # first reads were partial; re-reads found more
        assert r.windows("missed") == 0

        # The gauges describe the newest first read exactly as the simulator answered it.
        cursor = poller.accounts.ledger(ACC).cursor
        assert cursor is not None
        r.clock.set(cursor + 60 + 60 + 120 + 1)  # the next minute has just become ready
        await poller.poll(ACC)
        f = r.fragment()
        assert f.value(ACCOUNT.window_end, account=ACC) == cursor + 120
        seen = r.sim.traffic_window(ACC, cursor + 60, cursor + 120)
        assert (
            seen["edge_requests_total"]
            < r.sim.traffic_final(ACC, cursor + 60)["edge_requests_total"]
        )
        rate = f.value(ACCOUNT.requests_per_second, account=ACC, side="edge")
        assert rate == seen["edge_requests_total"] / 60
        bw = f.value(ACCOUNT.bandwidth, account=ACC, side="edge")
        assert bw == pytest.approx(seen["edge_bandwidth"] / 8)
        ratio = f.value(ACCOUNT.edge_hit_ratio, account=ACC)
        assert ratio == seen["edge_hit_ratio"]

        drained = await drain(r, state_file)
        cursor = drained.accounts.ledger(ACC).cursor
        assert cursor is not None
        covered = range(first, cursor + 60, 60)
        assert len(covered) >= 60
        assert assert_counters_equal_truth(r, covered) == len(COUNT_KEYS) * 9


async def test_one_minute_upstream_and_nested_request_times(
    aiohttp_server: ServerFactory, tmp_path: Path
) -> None:
    config = SimConfig(late_seconds=200, max_window_minutes=1, request_time_format="nested")
    state_file = str(tmp_path / "traffic.json")
    async with rig(aiohttp_server, config) as r:
        poller = r.poller(revisit_minutes=3, state_file=state_file)
        await r.drive(poller, 8 * 60)
        first = poller.accounts.ledger(ACC).cursor - 7 * 60  # type: ignore[operator]
        r.sim.faults.set("traffic", "500")
        await r.drive(poller, 6 * 60, fails=True)
        r.sim.faults.clear("traffic")
        await r.drive(poller, 10 * 60)
        # a 3-minute settle read or the backfill got 422
        assert poller.accounts.ledger(ACC).long_refused
        assert r.windows("backfilled") >= 6
        assert r.windows("revised") > 0
        f = r.fragment()
        median = f.value(ACCOUNT.response_time_median, account=ACC, side="edge", size_range="4M+")
        assert median is not None
        assert median > 0
        res = r.sim.resources(ACC)[0].id
        assert f.value(RESOURCE.response_time_median, resource=res, size_range="0_250k")

        drained = await drain(r, state_file)
        cursor = drained.accounts.ledger(ACC).cursor
        assert cursor is not None
        covered = range(first, cursor + 60, 60)
        assert assert_counters_equal_truth(r, covered) == len(COUNT_KEYS) * 6


async def assert_exact_after_drain(
    r: Rig, state_file: str, first: int, unreadable: Unreadable = frozenset()
) -> int:
    """Drain the unsettled runs (a restart that reads nothing new), then compare every counter
    with the final truth from ``first`` to the cursor; returns how many series were compared."""
    drained = await drain(r, state_file)
    cursor = drained.accounts.ledger(ACC).cursor
    assert cursor is not None
    return assert_counters_equal_truth(r, range(first, cursor + 60, 60), unreadable)


async def outage(r: Rig, poller: TrafficPoller, seconds: float, fault: str = "500") -> None:
    """Every traffic request fails with ``fault`` for ``seconds`` of polls."""
    r.sim.faults.set("traffic", fault)
    await r.drive(poller, seconds, fails=True)
    r.sim.faults.clear("traffic")
