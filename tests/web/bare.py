"""The daemon with no area but traffic, nothing scheduled, started by the rig: a store to
publish fragments into by hand and the routes that serve them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web

from exporter.config import parse_config
from exporter.exposition import Store
from exporter.support.clock import FakeClock
from exporter.web.app import CTX
from tests.rig.daemon import Daemon, StartDaemon


async def bare_daemon(
    start_daemon: StartDaemon,
    now: float = 1_767_225_600,
    before_start: Callable[[Store], Awaitable[None]] | None = None,
) -> tuple[Daemon, Store]:
    """The daemon and its store; ``before_start`` fills the store before the daemon starts
    (its renderer then finds nothing new to render)."""
    settings = parse_config(
        {
            "upstream": {"base_url": "http://127.0.0.1:9", "token": "t"},
            "restream": {"enabled": False},
            "dvr": {"enabled": False},
            "talking_head": {"enabled": False},
        },
        env={},
    )

    async def fill(app: web.Application) -> None:
        if before_start is not None:
            await before_start(app[CTX].store)

    daemon = await start_daemon(settings, FakeClock(now), before_start=fill)
    return daemon, daemon.ctx.store
