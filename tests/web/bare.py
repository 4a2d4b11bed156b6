"""The daemon's web application with no area but traffic, nothing scheduled: a store to
publish fragments into by hand and the routes that serve them."""

from __future__ import annotations

from aiohttp import web

from exporter.config import parse_config
from exporter.exposition import Store
from exporter.support.clock import FakeClock
from exporter.web.daemon import SERVICE, create_app


async def bare_app(now: float = 1_767_225_600) -> tuple[web.Application, Store]:
    settings = parse_config(
        {
            "upstream": {"base_url": "http://127.0.0.1:9", "token": "t"},
            "restream": {"enabled": False},
            "dvr": {"enabled": False},
            "talking_head": {"enabled": False},
        },
        env={},
    )
    app = await create_app(settings, clock=FakeClock(now), schedule=False)
    return app, app[SERVICE].ctx.store
