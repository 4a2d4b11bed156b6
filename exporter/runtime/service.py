"""The daemon's core: its context, areas and scheduler, and the accounts it serves.

The web app around it, with the session, renderer and clean shutdown: exporter.web.daemon.
"""

from __future__ import annotations

from functools import partial

import aiohttp
import structlog

from exporter.areakit import Job
from exporter.config import Settings
from exporter.exposition import FamilySelection, Store
from exporter.exposition.formats import registry_openmetrics
from exporter.runtime import tuning
from exporter.runtime.areas import Areas
from exporter.runtime.context import Context
from exporter.runtime.polling import PollRunner
from exporter.runtime.presence import Presence
from exporter.runtime.scheduler import Scheduler
from exporter.runtime.selfmetrics import SelfMetrics
from exporter.support.clock import Clock
from exporter.support.logs import Redactor
from exporter.upstream import Operations, UpstreamClient

log = structlog.get_logger("exporter.runtime.service")

DISCOVERY_SECONDS = 600.0
AUTH_CHECK_SECONDS = 60.0


def build_context(
    settings: Settings,
    session: aiohttp.ClientSession,
    clock: Clock,
    redactor: Redactor,
    process: bool = True,
) -> Context:
    """The parts every area shares; ``process``: with the ``process_*`` and ``python_info``
    self-metrics (the simulation leaves them out: they read the machine, not the run)."""
    metrics = SelfMetrics(process=process)
    metrics.reload_success_time.set(clock.time())
    selection = FamilySelection(settings.metrics.include, settings.metrics.exclude)
    store = Store(
        clock,
        extra=metrics.render,
        selection=selection,
        extra_openmetrics=partial(registry_openmetrics, metrics.registry),
        after_render=tuning.after_render,
    )
    client = UpstreamClient(
        session,
        settings.upstream,
        metrics,
        clock,
        redactor,
        admin_concurrency=settings.admin.upstream_concurrency,
    )
    runner = PollRunner(metrics, clock, mask=redactor.text)
    runner.no_access = client.no_access.__contains__
    ctx = Context(
        settings=settings,
        clock=clock,
        store=store,
        metrics=metrics,
        runner=runner,
        client=client,
        ops=Operations(client),
        redactor=redactor,
        started_at=clock.time(),
    )
    if settings.accounts is not None:
        ctx.accounts = tuple(a.name for a in settings.accounts if settings.shard.owns(a.name))
    return ctx


class Service:
    """The jobs of every enabled area (``exporter.runtime.registry``), scheduled for
    each account this replica serves; an account that leaves is forgotten everywhere."""

    def __init__(self, ctx: Context, scheduler: Scheduler) -> None:
        self.ctx = ctx
        self.scheduler = scheduler
        self.areas = Areas(ctx)
        self._scheduled: set[str] = set()
        self._presence = Presence()  # several discovery misses in a row release an account
        # Discovered accounts the state file holds as served: taken as served until the first
        # discovery reply, so one reply that leaves one out does not release it either.
        self._restored = (
            self.areas.traffic.poller.accounts.held() if ctx.settings.accounts is None else ()
        )

    def jobs(self, account: str) -> list[Job]:
        """Every poll scheduled for ``account``: the jobs of each enabled area."""
        return [job for area in self.areas.enabled() for job in area.jobs(account)]

    def _timings(self) -> list[tuple[str, str, float]]:
        """Every job's interval under the settings in force (a reload that changes one
        reschedules the accounts)."""
        return [(j.area, j.name, j.seconds) for area in self.areas for j in area.jobs("")]

    def _schedule(self, account: str) -> None:
        for job in self.jobs(account):
            self.scheduler.every(job.area, account, job.seconds, job.poll, job.name, job.again)
        self._scheduled.add(account)

    def reconfigure(self, settings: Settings) -> None:
        """Apply a reloaded config (``exporter.runtime.reload.live_settings`` of it): the
        family selection, the poll intervals and the configured accounts. Counters, ledgers,
        cursors and the state of the accounts that stay are kept."""
        before = self._timings()
        self.ctx.redactor.add(*settings.secrets())  # rotated ones masked before any use
        if settings.upstream.token != self.ctx.settings.upstream.token:
            self.ctx.client.replace_token(settings.upstream.token)
        if settings.upstream.password != self.ctx.settings.upstream.password:
            self.ctx.client.replace_password(settings.upstream.password)
        self.ctx.settings = settings
        self.ctx.store.selection = FamilySelection(
            settings.metrics.include, settings.metrics.exclude
        )
        # the other areas read the selection each poll
        self.areas.traffic.poller.publisher.reselect()
        if self._timings() != before:
            for account in sorted(self._scheduled):
                self.scheduler.remove_account(account)
                self._schedule(account)
        if settings.accounts is not None:
            shard = settings.shard
            self.serve_accounts(tuple(a.name for a in settings.accounts if shard.owns(a.name)))

    async def republish(self) -> None:
        """After a reload: the traffic fragments rebuilt with the selection in force, then
        ``/metrics`` rendered, so the reload shows at once (families of the other areas that
        the selection left out are hidden by the render; ones it newly takes in come with
        their area's next poll)."""
        await self.areas.traffic.poller.publisher.republish()
        await self.ctx.store.render()

    def serve_accounts(self, accounts: tuple[str, ...]) -> None:
        """Schedule new accounts and forget the ones this replica no longer serves."""
        for gone in self._scheduled - set(accounts):
            self.scheduler.remove_account(gone)
            for area in self.areas:
                area.forget(gone)
            self.ctx.metrics.forget_account(gone)
            self.ctx.runner.forget(gone)
            self.ctx.client.budget.forget(gone)
            self.ctx.client.no_access.discard(gone)
            self.ctx.store.drop_account(gone)
            self._scheduled.discard(gone)
        for account in accounts:
            if account not in self._scheduled:
                self._schedule(account)
        for area in self.areas:
            area.serve(accounts)
        self.ctx.accounts = accounts

    async def discover(self) -> bool:
        """Refresh the account list from the inventory endpoint (when none are configured);
        False when the inventory could not be read (the scheduler retries it soon)."""

        async def poll() -> None:
            found = await self.ctx.client.accounts()
            shard = self.ctx.settings.shard
            owned = (a.name for a in found if shard.owns(a.name))
            serving = (*self.ctx.accounts, *self._restored)
            names = self._presence.served(owned, serving, shard.owns)
            self._restored = ()
            if names != self.ctx.accounts:
                log.info("accounts_discovered", accounts=list(names), shard=str(shard))
            self.serve_accounts(names)

        return await self.ctx.runner.run("auth", "", poll)

    async def check_auth(self) -> bool:
        """``cdnvideo_up{area="auth"}``: 0 while the last attempt to get a token failed, also
        when the areas still go on with a token that has not expired yet."""

        async def poll() -> None:
            await self.ctx.client.auth.check()

        return await self.ctx.runner.run("auth", "", poll)

    def start(self, timers: bool = True) -> None:
        """Serve the accounts (or schedule their discovery); ``timers=False`` leaves the
        scheduler's loop stopped, so nothing runs until a caller runs ``jobs`` or makes
        APScheduler look for due jobs itself (tests, on a FakeClock)."""
        s = self.ctx.settings
        if s.accounts is None:
            self.scheduler.call("discover", DISCOVERY_SECONDS, self.discover)
        else:
            self.serve_accounts(self.ctx.accounts)
            if not s.upstream.token:
                self.scheduler.call("auth", AUTH_CHECK_SECONDS, self.check_auth)
        if timers:
            self.scheduler.start()

    async def stop(self) -> None:
        self.scheduler.shutdown()
        for area in self.areas:
            await area.stop()
