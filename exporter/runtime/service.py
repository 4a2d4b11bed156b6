"""Assemble and run the daemon: session, context, pollers, scheduler, renderer, clean shutdown."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import structlog
from aiohttp import web

from exporter.config import Settings
from exporter.exposition import Store
from exporter.restream.identity import fingerprint_secret
from exporter.runtime.context import Context
from exporter.runtime.polling import PollRunner
from exporter.runtime.scheduler import Scheduler
from exporter.runtime.selfmetrics import WINDOW_OUTCOMES, SelfMetrics
from exporter.support.clock import Clock, SystemClock
from exporter.support.logs import Redactor
from exporter.upstream import Operations, UpstreamClient
from exporter.web.app import init_app
from exporter.web.webconfig import WebConfig

log = structlog.get_logger("exporter.runtime.service")

TRAFFIC_TICK_SECONDS = 15.0
DISCOVERY_SECONDS = 600.0
AUTH_CHECK_SECONDS = 60.0
# With a request budget, restream history and DVR jobs run this many times per interval, each
# run reading its share, so their requests are spread over the interval instead of a burst.
SPREAD_SLICES = 6


def build_context(
    settings: Settings,
    session: aiohttp.ClientSession,
    clock: Clock,
    redactor: Redactor,
) -> Context:
    metrics = SelfMetrics()
    store = Store(clock, extra=metrics.render)
    client = UpstreamClient(session, settings.upstream, metrics, clock, redactor)
    ctx = Context(
        settings=settings,
        clock=clock,
        store=store,
        metrics=metrics,
        runner=PollRunner(metrics, clock),
        client=client,
        ops=Operations(client),
        redactor=redactor,
        started_at=clock.time(),
    )
    if settings.accounts is not None:
        ctx.accounts = tuple(a.name for a in settings.accounts if settings.shard.owns(a.name))
    return ctx


class Service:
    """The pollers of every area, scheduled for each account this replica serves."""

    def __init__(self, ctx: Context, scheduler: Scheduler) -> None:
        from exporter.dvr import DvrPoller
        from exporter.restream import RestreamPoller
        from exporter.talking_head import TalkingHeadPoller
        from exporter.talking_head.tasks import TaskTracker
        from exporter.traffic import TrafficPoller

        s = ctx.settings
        self.ctx = ctx
        self.scheduler = scheduler
        self.slices = SPREAD_SLICES if s.upstream.max_requests_per_minute else 1
        self.traffic = TrafficPoller(ctx.client, ctx.store, ctx.metrics, ctx.clock, s.traffic)
        self.restream = RestreamPoller(
            ctx.client,
            ctx.store,
            ctx.clock,
            s.restream,
            ctx.redactor,
            fingerprint_secret=fingerprint_secret(s.upstream),
            slices=self.slices,
        )
        streams = {a.name: a.dvr_streams for a in (s.accounts or ())}
        self.dvr = DvrPoller(ctx.client, ctx.store, ctx.clock, s.dvr, streams, self.slices)
        self.talking_head = TalkingHeadPoller(ctx.client, ctx.store, ctx.clock, s.talking_head)
        ctx.th_configurations = self.talking_head.latest_configurations
        ctx.refresh_quota = self._refresh_quota
        self.tasks = TaskTracker(ctx)
        ctx.extras["task_tracker"] = self.tasks
        self._scheduled: set[str] = set()

    async def _refresh_quota(self, account: str) -> None:
        await self.ctx.runner.run("talking_head", account, lambda: self.talking_head.poll(account))

    def jobs(self, account: str) -> list[tuple[str, float, Callable[[], Awaitable[None]], str]]:
        """(area, interval seconds, poll, job name) of every poll scheduled for ``account``.

        Traffic draws on the request budget request by request (it may use all of it); the
        other polls first check that the budget affords their requests, else they are
        postponed whole (and counted) rather than cut short.
        """
        s = self.ctx.settings
        jobs: list[tuple[str, float, Callable[[], Awaitable[None]], str]] = []
        if s.traffic.enabled:
            jobs.append(("traffic", TRAFFIC_TICK_SECONDS, lambda: self.traffic.poll(account), ""))
        if s.restream.enabled:
            status = self._afforded(account, "restream", lambda: 2, self.restream.poll)
            jobs.append(("restream", s.restream.interval_seconds, status, ""))
            history = self._afforded(
                account,
                "restream",
                lambda: len(self.restream.history_plan(account)),
                self.restream.poll_history,
            )
            every = s.restream.history_interval_seconds / self.slices
            jobs.append(("restream", every, history, "history"))
        if s.dvr.enabled:
            dvr = self._afforded(account, "dvr", lambda: len(self.dvr.due(account)), self.dvr.poll)
            jobs.append(("dvr", s.dvr.interval_seconds / self.slices, dvr, ""))
        if s.talking_head.enabled:
            th = self._afforded(account, "talking_head", lambda: 1, self.talking_head.poll)
            jobs.append(("talking_head", s.talking_head.interval_seconds, th, ""))
        return jobs

    def _afforded(
        self,
        account: str,
        area: str,
        cost: Callable[[], int],
        poll: Callable[[str], Awaitable[None]],
    ) -> Callable[[], Awaitable[None]]:
        """``poll(account)``, postponed (Postponed raised) when the budget cannot afford it."""
        budget = self.ctx.client.budget

        async def run() -> None:
            n = cost()
            if n and not budget.affords(account, area, n):
                budget.postpone(account, area)
            await poll(account)

        return run

    def serve_accounts(self, accounts: tuple[str, ...]) -> None:
        """Schedule new accounts and forget the ones this replica no longer serves."""
        for gone in self._scheduled - set(accounts):
            self.scheduler.remove_account(gone)
            self.ctx.metrics.forget_account(gone)
            self.ctx.runner.forget(gone)
            self.ctx.traffic_history.forget(gone)
            self.ctx.client.budget.forget(gone)
            self.ctx.store.drop_account(gone)
            self._scheduled.discard(gone)
        for account in accounts:
            if account in self._scheduled:
                continue
            if self.ctx.settings.traffic.enabled:
                # Start every outcome at 0 so the first missed minute is an increase.
                for outcome in WINDOW_OUTCOMES:
                    self.ctx.metrics.traffic_windows.labels(account, outcome)
            for area, seconds, poll, job in self.jobs(account):
                self.scheduler.every(area, account, seconds, poll, job)
            self._scheduled.add(account)
        self.traffic.serve(accounts)
        self.ctx.accounts = accounts

    async def discover(self) -> None:
        """Refresh the account list from the inventory endpoint (when none are configured)."""

        async def poll() -> None:
            found = await self.ctx.client.accounts()
            shard = self.ctx.settings.shard
            names = tuple(sorted(a.name for a in found if shard.owns(a.name)))
            if names != self.ctx.accounts:
                log.info("accounts_discovered", accounts=list(names), shard=str(shard))
            self.serve_accounts(names)

        await self.ctx.runner.run("auth", "", poll)

    async def check_auth(self) -> None:
        """``cdnvideo_up{area="auth"}``: 0 while the last attempt to get a token failed, also
        when the areas still go on with a token that has not expired yet."""

        async def poll() -> None:
            await self.ctx.client.auth.check()

        await self.ctx.runner.run("auth", "", poll)

    def start(self, timers: bool = True) -> None:
        """Serve the accounts (or schedule their discovery); ``timers=False`` leaves the
        scheduler stopped, so nothing runs until a caller runs ``jobs`` itself (tests)."""
        s = self.ctx.settings
        if s.accounts is None:
            self.scheduler.call("discover", DISCOVERY_SECONDS, self.discover)
        else:
            self.serve_accounts(self.ctx.accounts)
            if not s.upstream.token:
                self.scheduler.call("auth", AUTH_CHECK_SECONDS, self.check_auth)
        if timers:
            self.scheduler.start()

    def stop(self) -> None:
        self.scheduler.shutdown()
        self.traffic.save_state()


SERVICE: web.AppKey[Service] = web.AppKey("service", Service)


async def create_app(
    settings: Settings,
    clock: Clock | None = None,
    redactor: Redactor | None = None,
    schedule: bool = True,
    web_config: WebConfig | None = None,
) -> web.Application:
    """The whole daemon as an aiohttp app; its cleanup context owns every resource.

    A coroutine, so the client session is created inside the running loop. The Service is
    ``app[SERVICE]``; with ``schedule=False`` nothing is polled on a timer, so tests drive
    the polls themselves (``Service.jobs``) against an injected clock. ``web_config`` (the
    checked ``web_config_file``) adds basic auth and headers; the caller serves its TLS.
    """
    clock = clock or SystemClock()
    redactor = redactor or Redactor(settings.secrets())
    holder: dict[str, Any] = {}

    async def lifecycle(app: web.Application) -> AsyncIterator[None]:
        session = holder["session"]
        service = app[SERVICE]
        tasks = [
            asyncio.create_task(holder["ctx"].store.run_renderer(), name="renderer"),
            asyncio.create_task(service.tasks.run(), name="task-tracker"),
        ]
        await holder["ctx"].store.render()
        service.start(timers=schedule)
        log.info(
            "exporter_started",
            listen=settings.listen,
            base_url=settings.upstream.base_url,
            accounts=list(holder["ctx"].accounts) or "discovering",
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
            log.info("exporter_stopped")

    session = aiohttp.ClientSession(
        headers={"User-Agent": "cdnvideo-exporter"},
        connector=aiohttp.TCPConnector(limit=settings.upstream.max_concurrency * 2),
    )
    ctx = build_context(settings, session, clock, redactor)
    holder.update(session=session, ctx=ctx)
    app = init_app(ctx, web_config)
    app[SERVICE] = Service(ctx, Scheduler(ctx.runner))
    app.cleanup_ctx.append(lifecycle)
    return app
