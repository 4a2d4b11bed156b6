"""Discovered accounts: one inventory reply that leaves an account out does not release it;
DISCOVERY_MISSES_TO_RELEASE in a row do, and when it comes back its traffic resumes from the
ledger: the minutes missed are read and counted once, every counter exact.

The daemon is started by the rig (tests/rig/daemon.py) and polls the simulator over HTTP on a
fake clock.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from exporter.config import parse_config
from exporter.runtime.presence import DISCOVERY_MISSES_TO_RELEASE
from exporter.runtime.service import Service
from exporter.simulator import SimConfig, Simulator, serve
from exporter.support.clock import FakeClock
from exporter.traffic.area import TrafficArea
from tests.rig.daemon import running

T0 = 1_767_225_600 + 12 * 3600 + 5  # 2026-01-01T12:00:05Z
AWAY, STAYS = "demo-media", "demo-shop"


@pytest.fixture
async def service() -> AsyncIterator[tuple[Service, Simulator, FakeClock]]:
    clock = FakeClock(T0)
    sim = Simulator(SimConfig(late_seconds=90, resources_per_account=2), clock)
    sim_runner = await serve(sim, "127.0.0.1", 0)
    settings = parse_config(
        {
            "upstream": {"base_url": sim_runner.base_url, "token": sim.token},
            "traffic": {"delay_seconds": 120, "revisit_minutes": 0, "catch_up_minutes": 60},
            "restream": {"enabled": False},
            "dvr": {"enabled": False},
            "talking_head": {"enabled": False},
        },
        env={},
    )
    try:
        async with running(settings, clock) as started:
            yield started.service, sim, clock
    finally:
        await sim_runner.cleanup()


async def minutes(service: Service, clock: FakeClock, count: int, *accounts: str) -> None:
    """``count`` minutes of polls every 15 s, each followed by a scrape (Prometheus reads
    /metrics between two polls: a new counter series is held at 0 until a scrape read it)."""
    store = service.ctx.store
    for _ in range(count * 4):
        for account in accounts:
            for job in service.jobs(account):
                await service.ctx.runner.run(job.area, account, job.poll, job.name)
        store.mark_served(store.render_sync())
        clock.advance(15)


async def test_an_account_left_out_of_discovery_is_released_after_misses_and_resumes(
    service: tuple[Service, Simulator, FakeClock],
) -> None:
    svc, sim, clock = service
    poller = svc.areas.get(TrafficArea).poller
    await svc.discover()
    assert svc.ctx.accounts == (AWAY, STAYS)
    await minutes(svc, clock, 1, AWAY, STAYS)
    first = poller.accounts.ledger(AWAY).cursor
    assert first is not None
    await minutes(svc, clock, 5, AWAY, STAYS)

    sim.unlisted.add(AWAY)
    for _ in range(DISCOVERY_MISSES_TO_RELEASE - 1):  # not enough to release it
        await svc.discover()
        assert svc.ctx.accounts == (AWAY, STAYS)
        await minutes(svc, clock, 1, AWAY, STAYS)
    assert not poller.accounts.ledger(AWAY).released_at
    await svc.discover()  # the last miss in a row: released
    assert svc.ctx.accounts == (STAYS,)
    released = poller.accounts.get(AWAY)
    assert released is not None
    assert released.ledger.released_at
    cursor = released.ledger.cursor
    assert cursor is not None

    await minutes(svc, clock, 20, STAYS)  # 20 minutes away
    sim.unlisted.clear()
    await svc.discover()
    assert svc.ctx.accounts == (AWAY, STAYS)
    await minutes(svc, clock, 1, AWAY, STAYS)
    led = poller.accounts.ledger(AWAY)
    assert led.cursor is not None
    assert led.cursor >= cursor + 20 * 60  # the minutes away were read
    metrics = svc.ctx.metrics.registry
    labels = {"account": AWAY, "outcome": "missed"}
    assert metrics.get_sample_value("cdnvideo_traffic_windows_total", labels) == 0
    text = svc.ctx.store.render_sync().plain.decode()
    want = sum(
        sim.traffic_final(AWAY, m)["edge_requests_total"] for m in range(first, led.cursor + 60, 60)
    )
    line = f'cdnvideo_account_requests_total{{account="{AWAY}",side="edge"}} '
    got = float(next(x for x in text.splitlines() if x.startswith(line)).split()[-1])
    assert got == want  # every minute once: none lost while away, none twice
