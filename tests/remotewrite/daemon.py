"""The whole daemon with remote write on (tests/rig/daemon.py's ``running``, on a FakeClock),
one account of the simulator and a receiver over HTTP: started, run, and stopped."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web

from exporter.config import parse_config
from exporter.runtime.scheduler import EXACT
from exporter.simulator import SimConfig, Simulator, serve
from exporter.support.clock import FakeClock
from exporter.web.daemon import REMOTE_WRITER, SERVICE
from tests.remotewrite.receiver import Receiver
from tests.rig.client import T0, ServerFactory
from tests.rig.daemon import running
from tests.rig.schedule import run_due

ACC = "demo-media"
__all__ = ["ACC", "T0", "Daemon", "ServerFactory", "daemon"]


@dataclass
class Daemon:
    receiver: Receiver
    sim: Simulator
    clock: FakeClock
    app: web.Application

    async def run_until(self, end: float) -> None:
        """Every job due before ``end``, each at its time, then what remote write has pending."""
        scheduler = self.app[SERVICE].scheduler
        while (due := scheduler.next_due()) is not None and due < end:
            self.clock.set(due)
            await run_due(scheduler)
        await self.app[REMOTE_WRITER].flush()


@asynccontextmanager
async def daemon(
    aiohttp_server: ServerFactory, state_file: Path, **write: str
) -> AsyncIterator[Daemon]:
    """Traffic alone for ``ACC`` (settle reads 2 minutes after), its state in ``state_file``,
    written to the receiver (``write``: more of the ``remote_write`` section); stopped (the
    shutdown's saves) on leaving."""
    receiver = Receiver()
    server = await aiohttp_server(receiver.app(), host="127.0.0.1", port=0)
    clock = FakeClock(T0)
    sim = Simulator(SimConfig(accounts=(ACC,), resources_per_account=2, late_seconds=90), clock)
    sim_runner = await serve(sim)
    conf = parse_config(
        {
            "upstream": {"base_url": sim_runner.base_url, "token": sim.token},
            "accounts": [ACC],
            "traffic": {"revisit_minutes": 2, "state_file": str(state_file)},
            "restream": {"enabled": False},
            "dvr": {"enabled": False},
            "talking_head": {"enabled": False},
            "remote_write": {"url": str(server.make_url("/api/v1/write")), **write},
            "log": {"level": "error", "format": "json"},
        },
        env={},
    )
    try:
        async with running(conf, clock, timing=EXACT) as running_daemon:
            yield Daemon(receiver, sim, clock, running_daemon.app)
    finally:
        await sim_runner.cleanup()
