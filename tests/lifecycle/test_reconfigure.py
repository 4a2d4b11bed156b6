"""Service.reconfigure (what a reload applies) on a daemon polling the simulator over HTTP."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import structlog
import yaml

from exporter.config import load_config, parse_config
from exporter.runtime.reload import changed_keys, live_settings
from exporter.runtime.scheduler import JobKey
from exporter.simulator import SimConfig, Simulator, serve
from exporter.support.clock import FakeClock
from exporter.traffic.settings import TRAFFIC_SECTION
from exporter.web.daemon import RELOADER, SERVICE
from tests.lifecycle.daemon import sample
from tests.rig.daemon import running

T0 = 1_767_225_600 + 17 * 3600 + 5


async def test_selection_intervals_and_accounts_apply_and_counters_stay() -> None:
    clock = FakeClock(T0)
    sim = Simulator(SimConfig(accounts=("demo-media", "demo-shop")), clock)
    sim_runner = await serve(sim)
    base = {
        "upstream": {"base_url": sim_runner.base_url, "token": sim.token},
        "accounts": ["demo-media"],
        "traffic": {"per_resource": False},
        "dvr": {"enabled": False},
        "talking_head": {"enabled": False},
    }
    old = parse_config(base, env={})
    try:
        async with running(old, clock) as daemon:
            app = daemon.app
            service = app[SERVICE]
            ctx = service.ctx

            async def poll_all(minutes: int) -> str:
                for _ in range(minutes * 4):
                    for account in ctx.accounts:
                        for job in service.jobs(account):
                            await ctx.runner.run(job.area, account, job.poll, job.name)
                    # Prometheus reads /metrics between two polls (a new counter series is held
                    # at 0 until a scrape was answered with it)
                    ctx.store.mark_served(ctx.store.render_sync())
                    clock.advance(15)
                return ctx.store.render_sync().plain.decode()

            text = await poll_all(6)
            requests = 'cdnvideo_account_requests_total{account="demo-media",side="edge"}'
            before = float(text.split(requests + " ", 1)[1].split("\n", 1)[0])
            assert before > 0

            new = parse_config(
                {
                    **base,
                    "accounts": ["demo-media", "demo-shop"],
                    "restream": {"interval_seconds": 45},
                    "metrics": {"exclude": ["^cdnvideo_account_bandwidth_bytes_per_second$"]},
                    "traffic": {"per_resource": False, "delay_seconds": 60},  # needs a restart
                },
                env={},
            )
            live = live_settings(old, new)
            assert changed_keys(old, live) == [
                "accounts",
                "restream.interval_seconds",
                "metrics.exclude",
            ]
            assert changed_keys(live, new) == ["traffic.delay_seconds"]
            service.reconfigure(live)
            assert service.scheduler.interval(JobKey("restream", "demo-shop")) == 45
            assert service.scheduler.interval(JobKey("restream", "demo-media")) == 45

            text = await poll_all(6)
            after = float(text.split(requests + " ", 1)[1].split("\n", 1)[0])
            assert after > before  # the counter went on from where it was
            assert "cdnvideo_account_bandwidth_bytes_per_second{" not in text
            assert 'cdnvideo_up{account="demo-shop",area="restream"} 1.0' in text
            assert TRAFFIC_SECTION.of(ctx.settings) == dataclasses.replace(
                TRAFFIC_SECTION.of(old)
            )  # kept for a restart
    finally:
        await sim_runner.cleanup()


async def test_a_reload_applies_the_selection_to_metrics_at_once() -> None:
    """No poll between the reload and the scrape: a family newly left out is gone (traffic and
    restream alike), a traffic family newly taken in is there, counters are unchanged."""
    clock = FakeClock(T0)
    sim = Simulator(SimConfig(accounts=("demo-media",)), clock)
    sim_runner = await serve(sim)
    base = {
        "upstream": {"base_url": sim_runner.base_url, "token": sim.token},
        "accounts": ["demo-media"],
        "dvr": {"enabled": False},
        "talking_head": {"enabled": False},
        "metrics": {"exclude": ["^cdnvideo_account_edge_hit_ratio$"]},
    }
    changed = {"exclude": ["^cdnvideo_resource_", "^cdnvideo_restream_resource_info$"]}
    settings = [parse_config(base, env={})]
    try:
        async with running(settings[0], clock, load=lambda: settings[-1]) as daemon:
            app = daemon.app
            service = app[SERVICE]
            ctx = service.ctx
            for _ in range(6 * 4):
                for job in service.jobs("demo-media"):
                    await ctx.runner.run(job.area, "demo-media", job.poll, job.name)
                clock.advance(15)
            before = (await ctx.store.render()).plain.decode()
            requests = 'cdnvideo_account_requests_total{account="demo-media",side="edge"}'
            assert "cdnvideo_resource_requests_total{" in before
            assert "cdnvideo_restream_resource_info{" in before
            assert "cdnvideo_account_edge_hit_ratio{" not in before

            settings.append(parse_config({**base, "metrics": changed}, env={}))
            outcome = await app[RELOADER].reload()
            assert outcome.applied == ("metrics.exclude",)
            after = ctx.store.exposition.plain.decode()
            assert "cdnvideo_resource_" not in after
            assert "cdnvideo_restream_resource_info{" not in after
            assert "cdnvideo_restream_up{" in after
            assert "cdnvideo_account_edge_hit_ratio{" in after
            assert line(after, requests) == line(before, requests)
    finally:
        await sim_runner.cleanup()


def line(text: str, series: str) -> str:
    return next(x for x in text.splitlines() if x.startswith(series + " "))


async def test_a_reload_sends_the_token_a_rotated_token_file_holds(tmp_path: Path) -> None:
    clock = FakeClock(T0)
    sim = Simulator(SimConfig(accounts=("demo-media",)), clock)
    sim_runner = await serve(sim)
    token_file = tmp_path / "token"
    token_file.write_text("an-expired-token\n")
    config = tmp_path / "config.yml"
    config.write_text(
        yaml.safe_dump(
            {
                "upstream": {"base_url": sim_runner.base_url, "token_file": str(token_file)},
                "accounts": ["demo-media"],
                "traffic": {"enabled": False},
                "dvr": {"enabled": False},
                "talking_head": {"enabled": False},
            }
        )
    )
    try:
        async with running(
            load_config(config, env={}), clock, load=lambda: load_config(config)
        ) as daemon:
            app = daemon.app
            service = app[SERVICE]
            ctx = service.ctx

            async def up() -> float | None:
                for job in service.jobs("demo-media"):
                    await ctx.runner.run(job.area, "demo-media", job.poll, job.name)
                text = (await ctx.store.render()).plain.decode()
                return sample(text, 'cdnvideo_up{account="demo-media",area="restream"}')

            assert await up() == 0.0  # the platform refuses the old token
            token_file.write_text(sim.token + "\n")
            with structlog.testing.capture_logs() as logs:
                outcome = await app[RELOADER].reload()
            assert outcome.applied == ("upstream.token",)
            assert sim.token not in repr(logs)
            assert sim.token not in outcome.message
            clock.advance(60)
            assert await up() == 1.0
    finally:
        await sim_runner.cleanup()
