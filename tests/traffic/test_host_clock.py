"""The host's clock stepped (an NTP step after a VM resume) while the platform's runs on: no
read, first or settle, asks for a minute not yet closed on the platform's clock, and every
counter equals the simulator's final truth.

The simulator keeps the platform's clock; the poller and its client read the host's, which is
the platform's plus an offset the test steps.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp
import pytest

from exporter.config import UpstreamSettings
from exporter.exposition import Store
from exporter.runtime.selfmetrics import SelfMetrics
from exporter.simulator import SimConfig, Simulator
from exporter.simulator.routes_traffic import parse_minute
from exporter.support.clock import FakeClock
from exporter.support.hoststep import HostClockWatch
from exporter.traffic.parse import COUNT_KEYS
from exporter.upstream import UpstreamClient
from tests.traffic.test_against_simulator import (
    ACC,
    T0,
    Rig,
    ServerFactory,
    assert_counters_equal_truth,
    counter,
    drain,
    start_and_drive,
)

CONFIG = SimConfig(late_seconds=240, resources_per_account=3)


class HostClock(FakeClock):
    """The host's clock: the platform's plus ``offset`` (stepped by the test); advancing it
    advances the platform's."""

    def __init__(self, platform: FakeClock) -> None:
        super().__init__(platform.time())
        self.platform = platform
        self.offset = 0.0

    def time(self) -> float:
        return self.platform.time() + self.offset

    def monotonic(self) -> float:
        return self.platform.time()  # never stepped

    def advance(self, seconds: float) -> None:
        self.platform.advance(seconds)

    def set(self, now: float) -> None:
        self.platform.set(now - self.offset)


@asynccontextmanager
async def host_rig(
    server_factory: ServerFactory, config: SimConfig, budget: int = 0, offset: float = 0.0
) -> AsyncIterator[Rig]:
    """The simulator on the platform's clock, the client on the host's (``offset`` ahead);
    ``budget``: the client's ``upstream.max_requests_per_minute``."""
    platform = FakeClock(T0)
    sim = Simulator(config, platform)
    server = await server_factory(sim.build_app(), host="127.0.0.1", port=0)
    host = HostClock(platform)
    host.offset = offset
    metrics = SelfMetrics()
    async with aiohttp.ClientSession() as session:
        settings = UpstreamSettings(
            base_url=str(server.make_url("/")), token=sim.token, max_requests_per_minute=budget
        )
        client = UpstreamClient(session, settings, metrics, host, retries=0)
        yield Rig(sim, host, Store(host), metrics, client)


def reads_ahead_of_the_platform(r: Rig, since: float) -> list[float]:
    """When each traffic request the simulator logged (its last 1000) since ``since`` that
    asked for a minute not closed on its clock was sent (platform time)."""
    out = []
    for req in r.sim.requests:
        end = parse_minute("end", dict(req.query)["end"])
        if req.area == "traffic" and req.time >= since and end > req.time:
            out.append(req.time)
    return out


@pytest.mark.parametrize("per_resource", [True, False])
async def test_a_host_clock_stepped_forward_for_30_minutes_and_back_counts_every_minute(
    aiohttp_server: ServerFactory, tmp_path: Path, per_resource: bool
) -> None:
    state_file = str(tmp_path / "traffic.json")
    async with host_rig(aiohttp_server, CONFIG) as r:
        assert isinstance(r.clock, HostClock)
        poller = r.poller(state_file=state_file, per_resource=per_resource)
        first, _ = await start_and_drive(r, poller, 20 * 60)
        step = r.clock.platform.time()
        r.clock.offset = 600.0  # the step forward
        await r.drive(poller, 30 * 60)
        assert r.metrics.registry.get_sample_value("cdnvideo_upstream_clock_skew_seconds") == (
            pytest.approx(-600.0, abs=1.0)
        )
        # The step is seen against the monotonic clock before the first read after it: no
        # read asks for a minute not closed on the platform's clock.
        assert reads_ahead_of_the_platform(r, step) == []
        # and the platform's clock agrees with the step undone: no reading is rejected, so no
        # read after the step is thrown away
        assert (
            r.metrics.registry.get_sample_value("cdnvideo_upstream_clock_readings_rejected_total")
            == 0
        )
        back = r.clock.platform.time()
        r.clock.offset = 0.0  # and back
        await r.drive(poller, 30 * 60)
        assert reads_ahead_of_the_platform(r, back) == []
        assert r.windows("missed") == 0
        assert r.windows("given_up") == 0
        assert poller.accounts.ledger(ACC).cursor >= first + 75 * 60  # type: ignore[operator]
        drained = await drain(r, state_file, per_resource=per_resource)
        cursor = drained.accounts.ledger(ACC).cursor
        assert cursor is not None
        assert_account_counters_equal_truth(r, range(first, cursor + 60, 60), per_resource)


async def test_a_host_clock_stepped_15_minutes_back_keeps_counting(
    aiohttp_server: ServerFactory, tmp_path: Path
) -> None:
    """Our clock 15 minutes behind the platform's for 30 minutes: minutes are read when they
    close on the platform's clock (the step undone, then the platform's clock confirmed), not
    15 minutes later on ours; nothing is read early, nothing missed, every counter exact."""
    state_file = str(tmp_path / "traffic.json")
    async with host_rig(aiohttp_server, CONFIG) as r:
        assert isinstance(r.clock, HostClock)
        poller = r.poller(state_file=state_file)
        first, _ = await start_and_drive(r, poller, 20 * 60)
        step = r.clock.platform.time()
        r.clock.offset = -900.0
        lags = []
        for _ in range(30 * 4):
            await r.drive(poller, 15)
            lag = r.metrics.registry.get_sample_value(
                "cdnvideo_traffic_lag_seconds", {"account": ACC}
            )
            assert lag is not None
            lags.append(lag)
        assert r.metrics.registry.get_sample_value("cdnvideo_upstream_clock_skew_seconds") == (
            pytest.approx(900.0, abs=1.0)
        )
        # on the platform's clock: the delay (120 s) and a poll, a read's replies (which
        # confirm the new clock) at most a minute more; never the 15 minutes of the step
        assert max(lags) <= 120 + 60 + 60
        cursor = poller.accounts.ledger(ACC).cursor
        assert cursor is not None
        assert r.clock.platform.time() - (cursor + 60) <= 120 + 60 + 60
        r.clock.offset = 0.0
        await r.drive(poller, 20 * 60)
        assert reads_ahead_of_the_platform(r, step) == []
        assert r.windows("missed") == 0
        drained = await drain(r, state_file)
        cursor = drained.accounts.ledger(ACC).cursor
        assert cursor is not None
        assert_account_counters_equal_truth(r, range(first, cursor + 60, 60), True)


@pytest.mark.parametrize("ahead", [600.0, 1200.0, 5400.0])
async def test_a_restart_with_the_host_clock_ahead_reads_no_minute_before_it_closes(
    aiohttp_server: ServerFactory, tmp_path: Path, ahead: float
) -> None:
    """Restarted after a few minutes down with the host's clock ``ahead`` (no step for the
    new process to see: its monotonic clock starts there): until the platform's clock is
    confirmed, first reads go one minute at a time, the oldest owed first, and a reading
    behind ours holds the ready time back; no read asks for a minute not closed on the
    platform's clock, and every counter equals the truth (simulation seeds 4039, 4093,
    4108: a 10-minute window asked 4 minutes before its end closed). Ahead by more than
    ``catch_up_minutes`` (90 minutes; seed 3008), no minute is given up on our clock."""
    state_file = str(tmp_path / "traffic.json")
    async with host_rig(aiohttp_server, CONFIG) as r:
        assert isinstance(r.clock, HostClock)
        before = r.poller(state_file=state_file)
        first, _ = await start_and_drive(r, before, 20 * 60)
        r.clock.advance(4 * 60)  # down for 4 minutes, and back with the clock ahead
        r.clock.offset = ahead
        since = r.clock.platform.time()
        after = r.poller(state_file=state_file)
        await r.drive(after, 30 * 60)
        assert reads_ahead_of_the_platform(r, since) == []
        assert r.windows("missed") == 0
        cursor = after.accounts.ledger(ACC).cursor
        assert cursor is not None
        assert r.clock.platform.time() - (cursor + 60) <= 120 + 60 + 60
        drained = await drain(r, state_file)
        cursor = drained.accounts.ledger(ACC).cursor
        assert cursor is not None
        assert_account_counters_equal_truth(r, range(first, cursor + 60, 60), True)


def assert_account_counters_equal_truth(r: Rig, minutes: range, per_resource: bool) -> None:
    """Every account counter (and, with ``per_resource``, every resource counter) equals the
    simulator's final truth summed over ``minutes``."""
    if per_resource:
        assert assert_counters_equal_truth(r, minutes) > 0
        return
    f = r.fragment()
    finals = [r.sim.traffic_truth(ACC, m) for m in minutes]
    for key in COUNT_KEYS:
        assert counter(f, key) == sum(x[key] for x in finals), key


def test_a_step_is_told_from_slewing_by_the_monotonic_clock() -> None:
    """The wall clock moving up to 2 s more or less than the monotonic clock between two polls
    is slewing; more is a step, undone (``correction``)."""
    watch = HostClockWatch()
    assert watch.observe(1000.0, 5.0) == 0.0
    assert watch.observe(1016.5, 20.0) == 0.0  # slewed 1.5 s
    assert watch.correction == 0.0
    assert watch.observe(1631.5, 35.0) == 600.0
    assert watch.correction == -600.0
    assert watch.observe(1046.5, 50.0) == -600.0  # and back before the platform confirmed
    assert watch.correction == 0.0
    assert watch.observe(1361.5, 65.0) == 300.0
    assert watch.observe(1376.5, 80.0) == 0.0
    assert watch.correction == -300.0


@pytest.mark.parametrize("ahead", [7200.0, 1200.0])
async def test_a_host_clock_stepped_back_under_a_request_budget_keeps_reading(
    aiohttp_server: ServerFactory, tmp_path: Path, ahead: float
) -> None:
    """Our clock 2 h (or 20 minutes) fast, then stepped back by NTP, with a request budget of
    3 a minute: the budget counts on the monotonic clock, so the requests sent before the
    step never look recent for the length of the step; reading goes on with the next poll,
    nothing is missed, every counter exact."""
    state_file = str(tmp_path / "traffic.json")
    async with host_rig(aiohttp_server, CONFIG, budget=3, offset=ahead) as r:
        assert isinstance(r.clock, HostClock)
        poller = r.poller(state_file=state_file)
        while poller.accounts.ledger(ACC).cursor is None:  # the login took the first poll's room
            await r.drive(poller, 15)
        first = poller.accounts.ledger(ACC).cursor
        assert first is not None
        await r.drive(poller, 20 * 60)
        r.clock.offset = 0.0  # the step back
        step = r.clock.platform.time()
        await r.drive(poller, 20 * 60)
        sent = [q.time for q in r.sim.requests if q.area == "traffic" and q.time > step]
        assert sent
        assert sent[0] <= step + 75  # the next minute ready is read
        gaps = [b - a for a, b in itertools.pairwise(sent)]
        assert max(gaps) <= 120
        assert r.clock.platform.time() - sent[-1] <= 120
        cursor = poller.accounts.ledger(ACC).cursor
        assert cursor is not None
        assert r.clock.platform.time() - (cursor + 60) <= 120 + 60 + 15
        assert r.windows("missed") == 0
        drained = await drain(r, state_file)
        end = drained.accounts.ledger(ACC).cursor
        assert end is not None
        assert_account_counters_equal_truth(r, range(first, end + 60, 60), True)
