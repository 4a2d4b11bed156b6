"""The composition root: the daemon and the demo built and wired in this one module.

``load`` reads the settings and the web config and checks the state files; ``create_app``
builds everything once (context, the Service with its areas, remote write, the web app with
the admin API and the lifecycle route); ``run_daemon`` binds, configures logging and serves it
until SIGINT/SIGTERM (SIGHUP reloads); ``run_demo`` does the same against the built-in
simulator. exporter/cli.py parses the command line and calls these. (The module keeps the
name ``daemon``: its start-up lines name it, ``caller=daemon.py``.)
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import shlex
import socket
import sys
from collections.abc import AsyncIterator, Callable

import aiohttp
import structlog
from aiohttp import web

from exporter.config import ConfigError, Settings, parse_config, split_host_port
from exporter.config.flags import Flags, load_settings
from exporter.remotewrite.build import attach_writer
from exporter.remotewrite.settings import REMOTE_WRITE_SECTION
from exporter.remotewrite.writer import RemoteWriter
from exporter.runtime.registry import settings_sections
from exporter.runtime.reload import Reloader
from exporter.runtime.scheduler import JITTERED, Scheduler, Timing
from exporter.runtime.service import Service, build_context
from exporter.support.clock import Clock, SystemClock
from exporter.support.logs import Redactor, configure_logging
from exporter.upstream.errors import os_reason
from exporter.web.admin import ADMIN_STATE
from exporter.web.app import ADMIN_API, READINESS_LOG, init_app
from exporter.web.lifecycle import add_lifecycle_off_route, add_reload_route
from exporter.web.readiness import readiness
from exporter.web.serving import serve, wait_for_stop
from exporter.web.statepaths import state_file_problems
from exporter.web.webauth import listener_tls
from exporter.web.webconfig import WebConfig, load_web_config

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
    the polls themselves (``Service.jobs``, or APScheduler's look for due jobs through
    tests/rig/schedule.py) against an injected clock; ``timing`` places the scheduler's runs
    (``EXACT``: no jitter, no spread). Everything is built once, here: the context, the
    Service with its areas (and the one task tracker, which the lifecycle runs), then the web
    app around them.
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
    rw_session: aiohttp.ClientSession | None = None
    writer = None
    # each final traffic minute, by remote write (docs/remote-write.md)
    if REMOTE_WRITE_SECTION.of(settings).enabled:
        rw_session = aiohttp.ClientSession(headers={"User-Agent": "cdnvideo-exporter"})
        writer = attach_writer(
            settings,
            rw_session,
            clock,
            ctx.metrics,
            lambda name: ctx.store.selection.wants(name),  # the selection a reload set
            service.areas.traffic.poller.reader,
        )

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
            await service.stop()
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
        add_reload_route(app, app[RELOADER], lambda: ctx.settings.admin, failures)
    else:
        add_lifecycle_off_route(app)
    app.cleanup_ctx.append(lifecycle)
    return app


# --- the daemon: `cdnvideo-exporter run` --------------------------------------------------
def load(flags: Flags, create: bool = False) -> tuple[Settings, WebConfig | None]:
    """The settings and, when one is named, the checked web config (ConfigError if bad, or
    when a state file cannot be written; ``create`` makes its missing directories first)."""
    settings = load_settings(flags, settings_sections())
    web_config = load_web_config(settings.web_config_file) if settings.web_config_file else None
    unwritable = state_file_problems(settings, create)
    if unwritable:
        raise ConfigError.of(unwritable)
    return settings, web_config


def run_daemon(settings: Settings, web_config: WebConfig | None, flags: Flags) -> int:
    """Bind, configure logging and serve until a signal stops the daemon (exit status)."""
    try:  # bound before anything starts, so a taken port is the one line printed
        sock = bind(settings.listen_host, settings.listen_port)
    except OSError as exc:
        print(f"error: listen {settings.listen}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    redactor = configure_logging(
        settings.log.level, settings.log.format, Redactor(settings.secrets())
    )
    if web_config is not None:
        cli_log = structlog.get_logger("exporter.cli")  # the name these lines always had
        for warning in web_config.warnings:
            cli_log.warning("web_config_unsupported", detail=warning)
        cli_log.info(
            "web_config_loaded",
            file=web_config.path,
            tls=web_config.tls is not None,
            basic_auth_users=len(web_config.users),
        )
    return asyncio.run(_daemon(settings, flags, redactor, web_config, sock))


def bind(host: str, port: int) -> socket.socket:
    """The listening socket of the daemon (OSError when the address is taken or not ours)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    return socket.create_server((host, port), family=family, backlog=128)


async def _daemon(
    settings: Settings,
    flags: Flags,
    redactor: Redactor,
    web_config: WebConfig | None,
    sock: socket.socket,
) -> int:
    """Serve on ``sock`` until SIGINT/SIGTERM; SIGHUP reloads the config file."""
    from exporter.runtime.tuning import tune_for_serving

    app = await create_app(
        settings,
        redactor=redactor,
        web_config=web_config,
        load=lambda: load_settings(flags, settings_sections()),
        telemetry_path=flags.telemetry_path,
        enable_lifecycle=flags.enable_lifecycle,
    )
    tune_for_serving()
    tls = listener_tls(app)  # follows the web config's reloads (None: plain HTTP)
    runner, _ = await serve(
        app, settings.listen_host, settings.listen_port, settings.server, tls, sock=sock
    )
    reloads: set[asyncio.Task[object]] = set()

    def on_hup() -> None:
        task: asyncio.Task[object] = asyncio.create_task(app[RELOADER].reload())
        reloads.add(task)  # kept until done, so it is not collected half-way
        task.add_done_callback(reloads.discard)

    try:
        await wait_for_stop(on_hup=on_hup)
    finally:
        await runner.cleanup()
    return 0


# --- the demo: `cdnvideo-exporter demo` ----------------------------------------------------
async def serve_plain(
    app: web.Application, host: str, port: int, sock: socket.socket | None = None
) -> tuple[web.AppRunner, int]:
    """Serve ``app`` (the simulator's) without the daemon's limits, on ``sock`` when given;
    the runner and the port really bound (when 0 was asked for)."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site: web.BaseSite = web.SockSite(runner, sock) if sock else web.TCPSite(runner, host, port)
    await site.start()
    bound = int(runner.addresses[0][1])  # the real port when 0 was asked for
    return runner, bound


DEMO_FLAGS = ("--web.listen-address", "--simulator.listen-address")


def demo_sockets(listen: str, sim_listen: str) -> tuple[socket.socket, socket.socket]:
    """The exporter's and the simulator's listening sockets, both bound before anything
    starts. ConfigError naming the flag of each address that is malformed, taken or not this
    host's, and how to pass another: a second demo fails on its first line, not after its
    start-up lines."""
    bound: list[socket.socket] = []
    problems: list[str] = []
    for flag, address in zip(DEMO_FLAGS, (listen, sim_listen), strict=True):
        try:
            host, port = split_host_port(address, flag, allow_any=flag != DEMO_FLAGS[0])
            bound.append(bind(host, port))
        except ConfigError as exc:
            problems.extend(exc.problems)
        except OSError as exc:
            problems.append(
                f"{flag} {address}: {os_reason(exc)}; pass a free address, e.g. "
                f"make demo ARGS={flag}=127.0.0.1:9900 (cdnvideo-exporter demo {flag}=...)"
            )
    if problems:
        for sock in bound:
            sock.close()
        raise ConfigError.of(problems)
    return bound[0], bound[1]


def demo_settings(sim_url: str, token: str, listen: str, read: str, write: str) -> Settings:
    return parse_config(
        {
            "upstream": {"base_url": sim_url, "token": token},
            "accounts": [
                {"name": "demo-media", "dvr_streams": ["live/main", "news"]},
                {"name": "demo-shop", "dvr_streams": ["live/main", "news"]},
            ],
            "traffic": {"delay_seconds": 120, "revisit_minutes": 5},
            "restream": {"interval_seconds": 15, "history_interval_seconds": 60},
            "dvr": {"interval_seconds": 15},
            "talking_head": {"interval_seconds": 21600},
            "listen": listen,
            # No failed-authentication throttle and a read budget a fuzzer does not exhaust:
            # the demo is tried and fuzzed from one address against its own simulator.
            "admin": {
                "enabled": True,
                "read_token": read,
                "write_token": write,
                "auth_failures_per_minute": 0,
                "reads_per_minute": 6000,
            },
        },
        env={},
        areas=settings_sections(),
    )


async def run_demo(listen: str, sim_listen: str) -> int:
    """The simulator and the exporter against it, their URLs printed; until a signal. Both
    addresses are bound first (``demo_sockets``): a taken one is a ConfigError naming its
    flag, before anything starts."""
    from exporter.runtime.tuning import tune_for_serving
    from exporter.simulator import SimConfig, Simulator

    sock, sim_sock = demo_sockets(listen, sim_listen)
    sim = Simulator(SimConfig(), SystemClock())
    sim_host = split_host_port(sim_listen, DEMO_FLAGS[1], allow_any=True)[0]
    sim_runner, sim_bound = await serve_plain(sim.build_app(), sim_host, 0, sim_sock)
    read, write = secrets.token_urlsafe(12), secrets.token_urlsafe(16)
    sim_url = f"http://{sim_host}:{sim_bound}"
    settings = demo_settings(sim_url, sim.token, listen, read, write)
    redactor = configure_logging("info", "auto", Redactor(settings.secrets()))
    app = await create_app(settings, redactor=redactor)
    tune_for_serving()
    runner, bound = await serve(
        app, settings.listen_host, settings.listen_port, settings.server, sock=sock
    )
    base = f"http://{settings.listen_host}:{bound}"
    print(demo_banner(base, sim_url, sim.token, read, write), flush=True)
    try:
        await wait_for_stop()
    finally:
        await runner.cleanup()
        await sim_runner.cleanup()
    return 0


def demo_banner(base: str, sim_url: str, sim_token: str, read: str, write: str) -> str:
    """What the demo prints: its URLs and tokens, then the ``export`` lines the examples of
    README.md and docs/ use (``$EXPORTER``, ``$S``, the admin tokens), to paste into a shell."""
    exports = {
        "EXPORTER": base,
        "S": sim_url,
        "CDNVIDEO_ADMIN_READ_TOKEN": read,
        "CDNVIDEO_ADMIN_WRITE_TOKEN": write,
    }
    return "\n".join(
        [
            "cdnvideo-exporter demo: the exporter against its built-in simulator",
            f"  landing page    {base}/",
            f"  metrics         {base}/metrics",
            f"  readiness       {base}/readyz",
            f"  admin API spec  {base}/api/v1/openapi.json",
            f"  simulator       {sim_url}/  (token {sim_token})",
            f"  admin tokens    read {read}  write {write}  (this run only)",
            "  counters        a new traffic counter reads 0 until a scrape has read that 0, "
            "then its count (so increase() counts its first minutes)",
            f"  try: curl -H 'Authorization: Bearer {read}' "
            f"{base}/api/v1/restream/demo-media/status",
            "The examples of README.md and docs/ use these; paste them into your shell:",
            *(f"export {name}={shlex.quote(value)}" for name, value in exports.items()),
            "Press Ctrl-C to stop.",
        ]
    )
