"""The daemon under test, started the one way tests start it.

``running`` builds the whole daemon with ``create_app`` (no timers: a test runs the
scheduler's jobs itself, on the clock it gives) and serves it as ``cdnvideo-exporter`` serves
it (``exporter.web.serving.serve``: the ``server`` limits of its settings, on a free port of
127.0.0.1, TLS when ``tls`` gives a context for the app); on leaving, the runner's cleanup
runs the daemon's shutdown. ``start_daemon`` (tests/rig/fixtures.py) is the same for a test
that keeps one daemon until it ends. tests/structure/test_rig.py holds every other test to
these two.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import aiohttp
from aiohttp import web

from exporter.config import Settings
from exporter.runtime.context import Context
from exporter.runtime.service import Service
from exporter.support.clock import Clock
from exporter.web.app import CTX
from exporter.web.daemon import SERVICE, create_app
from exporter.web.serving import serve

Tls = Callable[[web.Application], ssl.SSLContext | None]


@dataclass
class Daemon:
    """A running daemon: its app, its base URL, an HTTP client for it (plain HTTP) and the
    runner that serves it (``runner.server.connections``: the connections open)."""

    app: web.Application
    url: str
    client: aiohttp.ClientSession  # requests by path: ``await daemon.client.get("/metrics")``
    runner: web.AppRunner

    @property
    def ctx(self) -> Context:
        return self.app[CTX]

    @property
    def service(self) -> Service:
        return self.app[SERVICE]


@asynccontextmanager
async def running(
    settings: Settings,
    clock: Clock | None = None,
    *,
    tls: Tls | None = None,
    shutdown_timeout: float = 1.0,
    before_start: Callable[[web.Application], Awaitable[None]] | None = None,
    **create: Any,
) -> AsyncIterator[Daemon]:
    """The daemon of ``settings`` on ``clock`` (None: the process clock), served until the
    block ends; ``before_start`` is given the app built and not started yet (its renderer
    not running); ``create`` goes to ``create_app`` (``timing``, ``redactor``,
    ``web_config``, ``load``, ``telemetry_path``, ``enable_lifecycle``)."""
    app = await create_app(settings, clock=clock, schedule=False, **create)
    if before_start is not None:
        await before_start(app)
    context = tls(app) if tls is not None else None
    runner, port = await serve(
        app, "127.0.0.1", 0, settings.server, context, shutdown_timeout=shutdown_timeout
    )
    try:
        url = f"{'https' if context else 'http'}://127.0.0.1:{port}"
        jar = aiohttp.CookieJar(unsafe=True)  # cookies of 127.0.0.1 kept, as a browser does
        async with aiohttp.ClientSession(base_url=url, cookie_jar=jar) as client:
            yield Daemon(app, url, client, runner)
    finally:
        await runner.cleanup()


StartDaemon = Callable[..., Awaitable[Daemon]]
