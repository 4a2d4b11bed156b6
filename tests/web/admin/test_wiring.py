"""The daemon as create_app wires it: one task tracker, run by the Service, fed by the admin API."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator
from dataclasses import dataclass

import aiohttp
import pytest

from exporter.config import parse_config
from exporter.exposition import StoreKey
from exporter.runtime.service import Service
from exporter.simulator import SimConfig, Simulator, serve
from exporter.support.clock import FakeClock
from exporter.talking_head.tasks import TASKS, TaskTracker
from tests.rig.daemon import running
from tests.rig.table import READ_TOKEN, WRITE_TOKEN

from .test_against_simulator import GENERATE

ACCOUNT = "demo-media"


@dataclass
class Daemon:
    url: str
    service: Service
    sim: Simulator


@pytest.fixture
async def daemon() -> AsyncIterator[Daemon]:
    clock = FakeClock()
    sim = Simulator(SimConfig(), clock)
    sim_runner = await serve(sim, "127.0.0.1", 0)
    settings = parse_config(
        {
            "upstream": {"base_url": sim_runner.base_url, "token": sim.token},
            "accounts": [ACCOUNT],
            "admin": {"enabled": True, "read_token": READ_TOKEN, "write_token": WRITE_TOKEN},
        },
        env={},
    )
    try:
        # started: the lifecycle runs the renderer and the task tracker
        async with running(settings, clock) as started:
            yield Daemon(started.url, started.service, sim)
    finally:
        await sim_runner.cleanup()


def trackers(daemon: Daemon) -> list[TaskTracker]:
    """Every tracker of this daemon's context alive in the process (apps of earlier tests may
    outlive them in aiohttp's middleware cache, so all trackers would count those too)."""
    gc.collect()
    ctx = daemon.service.ctx
    return [o for o in gc.get_objects() if isinstance(o, TaskTracker) and o._ctx is ctx]


async def test_the_admin_api_feeds_the_one_tracker_the_service_runs(daemon: Daemon) -> None:
    tracker = daemon.service.areas.talking_head.tracker
    await asyncio.sleep(0)  # the lifecycle's tasks have started
    assert tracker._running  # the Service's lifecycle runs this tracker's loop
    assert trackers(daemon) == [tracker]
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            f"{daemon.url}/api/v1/talking-head/{ACCOUNT}/generate",
            json=GENERATE,
            headers={"Authorization": f"Bearer {WRITE_TOKEN}"},
        ) as resp,
    ):
        body = await resp.json()
    assert resp.status == 202, body
    assert tracker.following() == [(ACCOUNT, body["id"], "in_queue")]
    frag = daemon.service.ctx.store.fragment(StoreKey("talking_head_tasks", ACCOUNT))
    assert frag is not None
    assert frag.value(TASKS, account=ACCOUNT, status="in_queue") == 1
    assert trackers(daemon) == [tracker]
