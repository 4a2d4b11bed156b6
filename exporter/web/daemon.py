"""The whole daemon as one aiohttp app: the runtime's Service with the web surface around it."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable

import aiohttp
import structlog
from aiohttp import web

from exporter.config import Settings
from exporter.remotewrite.build import build_writer
from exporter.remotewrite.settings import REMOTE_WRITE_SECTION
from exporter.remotewrite.writer import RemoteWriter
from exporter.runtime.reload import Reloader
from exporter.runtime.scheduler import JITTERED, Scheduler, Timing
from exporter.runtime.service import Service, build_context
from exporter.support.clock import Clock, SystemClock
from exporter.support.logs import Redactor
from exporter.traffic.settings import TRAFFIC_SECTION
from exporter.web.admin import ADMIN_STATE
from exporter.web.app import ADMIN_API, READINESS_LOG, init_app
from exporter.web.lifecycle import add_lifecycle_off_route, add_reload_route
from exporter.web.readiness import readiness
from exporter.web.webconfig import WebConfig

log = structlog.get_logger("exporter.runtime.service")  # the name start-up lines always had


# How often readiness is worked out for its ``readiness_changed`` log line.
READINESS_CHECK_SECONDS = 10.0

SERVICE: web.AppKey[Service] = web.AppKey("service", Service)
RELOADER: web.AppKey[Reloader] = web.AppKey("reloader", Reloader)
REMOTE_WRITER: web.AppKey[RemoteWriter] = web.AppKey("remote_writer", RemoteWriter)


async def create_app(
    settings: Settings,
    clock: Clock | None = None,
    redactor: Redactor | None = None,
    schedule: bool = True,
    web_config: WebConfig | None = None,
    load: Callable[[], Settings] | None = None,
    telemetry_path: str = "/metrics",
    enable_lifecycle: bool = False,
    timing: Timing = JITTERED,
) -> web.Application:
    """The whole daemon as an aiohttp app; its cleanup context owns every resource.

    A coroutine, so the client session is created inside the running loop. The Service is
    ``app[SERVICE]``; with ``schedule=False`` nothing is polled on a timer, so tests drive
    the polls themselves (``Service.jobs``, or the scheduler's ``run_due``) against an
    injected clock; ``timing`` places the scheduler's runs (``EXACT``: no jitter, no
    spread). Everything is built once, here: the context, the Service with its areas (and
    the one task tracker, which the lifecycle runs), then the web app around them.
    ``web_config`` (the checked ``web_config_file``) adds basic auth and headers; the caller
    serves its TLS. ``load`` re-reads the config file for a reload (``app[RELOADER]``,
    SIGHUP); with ``enable_lifecycle`` ``POST /-/reload`` does the same.
    """
    clock = clock or SystemClock()
    redactor = redactor or Redactor(settings.secrets())
    session = aiohttp.ClientSession(
        headers={"User-Agent": "cdnvideo-exporter"},
        connector=aiohttp.TCPConnector(
            limit=(settings.upstream.max_concurrency + settings.admin.upstream_concurrency) * 2
        ),
    )
    ctx = build_context(settings, session, clock, redactor)
    service = Service(ctx, Scheduler(ctx.runner, clock, timing, ctx.metrics.next_poll))
    rw_settings = REMOTE_WRITE_SECTION.of(settings)
    rw_session: aiohttp.ClientSession | None = None
    writer = None
    if rw_settings.enabled:  # each final traffic minute, by remote write (docs/remote-write.md)
        rw_session = aiohttp.ClientSession(headers={"User-Agent": "cdnvideo-exporter"})
        writer = build_writer(
            rw_settings,
            TRAFFIC_SECTION.of(settings).state_file,
            rw_session,
            clock,
            ctx.metrics,
            lambda name: ctx.store.selection.wants(name),  # the selection a reload set
        )
        service.areas.traffic.poller.final_minutes = writer

    async def lifecycle(app: web.Application) -> AsyncIterator[None]:
        tasks = [
            asyncio.create_task(ctx.store.run_renderer(), name="renderer"),
            asyncio.create_task(service.areas.talking_head.tracker.run(), name="task-tracker"),
        ]
        if writer is not None:
            tasks.append(asyncio.create_task(writer.run(), name="remote-write"))
        await ctx.store.render()
        service.start(timers=schedule)
        log.info(
            "exporter_started",
            listen=settings.listen,
            base_url=settings.upstream.base_url,
            accounts=list(ctx.accounts) or "discovering",
            shard=str(settings.shard),
        )
        try:
            yield
        finally:
            service.stop()
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            await session.close()
            if rw_session is not None:
                await rw_session.close()
            log.info("exporter_stopped")

    app = init_app(ctx, service.areas, web_config, telemetry_path)
    app[SERVICE] = service

    async def check_readiness() -> None:  # logs a change even when nothing probes /readyz
        app[READINESS_LOG].observe(*readiness(ctx, service.areas))

    service.scheduler.call("readiness", READINESS_CHECK_SECONDS, check_readiness)
    if writer is not None:
        app[REMOTE_WRITER] = writer
    if load is not None:
        app[RELOADER] = Reloader(
            load,
            lambda: ctx.settings,
            service.reconfigure,
            ctx.metrics.reload_done(clock),
            service.republish,
        )
    if load is not None and enable_lifecycle:
        admin = app.get(ADMIN_API)
        failures = admin[ADMIN_STATE].auth_failures if admin is not None else None
        add_reload_route(app, app[RELOADER], settings.admin, failures)
    else:
        add_lifecycle_off_route(app)
    app.cleanup_ctx.append(lifecycle)
    return app
