"""A failed poll of a slow area is tried again within a minute, not an interval later: the
whole daemon against the simulator, a 503 for talking head at start-up, on a FakeClock."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from aiohttp import web
from structlog.testing import capture_logs

from exporter.config import parse_config
from exporter.runtime.scheduler import EXACT
from exporter.simulator import SimConfig, Simulator, serve
from exporter.support.clock import FakeClock
from exporter.web.app import CTX
from exporter.web.daemon import SERVICE
from exporter.web.landing import render_landing
from tests.rig.daemon import running
from tests.rig.schedule import run_due

T0 = 1_767_225_600 + 17 * 3600 + 5
ACCOUNT = "demo-media"
SIX_HOURS = 21600.0


@contextlib.asynccontextmanager
async def daemon(
    clock: FakeClock, discover: bool = False
) -> AsyncIterator[tuple[web.Application, Simulator]]:
    """The whole daemon (no timers: the test runs the scheduler) against the simulator; the
    account configured, or with ``discover`` found through the inventory."""
    sim = Simulator(SimConfig(accounts=(ACCOUNT,), resources_per_account=2), clock)
    sim_runner = await serve(sim)
    accounts = {} if discover else {"accounts": [{"name": ACCOUNT}]}
    conf = parse_config(
        {
            "upstream": {"base_url": sim_runner.base_url, "token": sim.token},
            **accounts,
            "talking_head": {"interval_seconds": SIX_HOURS},
            "log": {"level": "error", "format": "json"},
        },
        env={},
    )
    try:
        async with running(conf, clock, timing=EXACT) as started:
            started.ctx.client.backoff_seconds = 0.0
            yield started.app, sim
    finally:
        await sim_runner.cleanup()


async def test_a_talking_head_poll_failing_at_start_up_is_retried_within_a_minute() -> None:
    clock = FakeClock(T0)
    async with daemon(clock) as (app, sim):
        ctx, scheduler = app[CTX], app[SERVICE].scheduler
        registry = ctx.metrics.registry
        labels = {"account": ACCOUNT, "area": "talking_head"}
        sim.faults.set("talking_head", "503")
        with capture_logs() as events:
            await run_due(scheduler)  # every first run, at T0 (EXACT: no spread)
        assert registry.get_sample_value("cdnvideo_up", labels) == 0.0
        retry = registry.get_sample_value("cdnvideo_next_poll_timestamp_seconds", labels)
        assert retry == T0 + 30.0
        assert "next try" in render_landing(ctx, app[SERVICE].areas)
        assert {
            "event": "poll_retry_scheduled",
            "job": f"talking_head/{ACCOUNT}/",
            "failures": 1,
            "in_seconds": 30.0,
            "log_level": "info",
        } in events
        clock.set(T0 + 24.0)
        sim.faults.clear()
        while (due := scheduler.next_due()) is not None and due <= T0 + 60.0:
            clock.set(due)
            await run_due(scheduler)
        assert registry.get_sample_value("cdnvideo_up", labels) == 1.0
        assert (
            registry.get_sample_value("cdnvideo_last_success_timestamp_seconds", labels)
            == T0 + 30.0
        )
        assert (
            registry.get_sample_value("cdnvideo_next_poll_timestamp_seconds", labels)
            == T0 + SIX_HOURS
        )


async def test_account_discovery_failing_at_start_up_is_retried_within_a_minute() -> None:
    clock = FakeClock(T0)
    async with daemon(clock, discover=True) as (app, sim):
        ctx, scheduler = app[CTX], app[SERVICE].scheduler
        sim.faults.set("inventory", "503")
        await run_due(scheduler)
        assert ctx.accounts == ()
        sim.faults.clear()
        while (due := scheduler.next_due()) is not None and due < T0 + 30.0:
            clock.set(due)  # the readiness check every 10 s; no discovery before its retry
            await run_due(scheduler)
        assert ctx.accounts == ()
        clock.set(T0 + 30.0)  # the retry, not the 600 s of the discovery interval
        await run_due(scheduler)
        assert ctx.accounts == (ACCOUNT,)
