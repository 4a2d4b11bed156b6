"""The traffic area as the daemon runs it: the poller's job, and the last hour of windows for
the landing charts."""

from __future__ import annotations

from functools import partial

from exporter.areakit import AreaContext, Job
from exporter.config import Settings
from exporter.support import offloop
from exporter.traffic.accounts import MOVED, REMOVED, UNLISTED, Release
from exporter.traffic.auditor import Auditor, audit_path
from exporter.traffic.history import TrafficHistory
from exporter.traffic.history_file import HistoryFile, Points, charts_path
from exporter.traffic.poller import TrafficPoller
from exporter.traffic.reply import MetricsEndpoint
from exporter.traffic.settings import TRAFFIC_SECTION
from exporter.traffic.windows import TICK_SECONDS


class TrafficArea:
    """``/app/metrics/v1/`` counters, and the last hour of windows for the landing charts.

    Traffic draws on the request budget request by request (it may use all of it)."""

    name = "traffic"
    title = "Traffic"

    def __init__(self, ctx: AreaContext) -> None:
        self._ctx = ctx
        settings = TRAFFIC_SECTION.of(ctx.settings)
        source = MetricsEndpoint(ctx.client)  # the metrics endpoint over the transport
        self.auditor = Auditor(
            source, ctx.store, ctx.clock, audit_path(settings.state_file), ctx.client.budget
        )
        self.poller = TrafficPoller(
            source,
            ctx.store,
            ctx.metrics,
            ctx.clock,
            settings,
            budget=ctx.client.budget,
            auditor=self.auditor,
        )
        self.history = TrafficHistory()
        ctx.store.listen(self.history.record)
        self.history_file = HistoryFile(
            self.history, charts_path(TRAFFIC_SECTION.of(ctx.settings).state_file)
        )
        self.history_file.load(ctx.clock.time())

    def enabled(self, settings: Settings) -> bool:
        return TRAFFIC_SECTION.of(settings).enabled

    def jobs(self, account: str) -> list[Job]:
        async def poll() -> None:
            try:
                await self.poller.poll(account)
            finally:
                await self.history_file.save_off_loop(self._ctx.clock.time())

        again = partial(self.poller.wake_at, account)
        return [Job(self.name, account, TICK_SECONDS, poll, again=again)]

    def serve(self, accounts: tuple[str, ...]) -> None:
        if self.enabled(self._ctx.settings):
            for account in accounts:
                self._ctx.metrics.start_traffic_account(account)
        kept = self.poller.accounts
        for name in kept.held():  # restored from the state file, or served until now
            if name not in accounts:
                kept.forget(name, self._why_gone(name))
        kept.serve(accounts)

    def _why_gone(self, account: str) -> Release:
        settings = self._ctx.settings
        if not settings.shard.owns(account):
            return MOVED
        return UNLISTED if settings.accounts is None else REMOVED

    def forget(self, account: str) -> None:
        self.poller.accounts.forget(account, self._why_gone(account))
        self.history.forget(account)

    async def stop(self) -> None:
        """At shutdown, the state file, the audit record and the charts written in one step
        on the refresh worker, after the steps queued before it; the event loop awaits it
        and writes nothing. The step is queued at once and the charts' points taken here:
        what the runs cancelled meanwhile queue comes after it, and their charts save finds
        the file just written."""
        now = self._ctx.clock.time()
        await offloop.off_loop(self._save_all, self.history_file.take(now, force=True), now)

    def _save_all(self, charts: Points | None, now: float) -> None:
        self.poller.publisher.save_now()
        self.auditor.save(force=True)
        if charts is not None:
            self.history_file.write(charts, now)
