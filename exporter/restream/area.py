"""The restream area as the daemon runs it: status every interval, history in slices."""

from __future__ import annotations

from exporter.areakit import AreaContext, Job, QuietArea, afforded, spread_slices
from exporter.config import Settings
from exporter.restream.identity import fingerprint_secret
from exporter.restream.poller import RestreamPoller
from exporter.restream.reply import RestreamReader
from exporter.restream.settings import RESTREAM_SECTION


class RestreamArea(QuietArea):
    """Restream status every interval; history in slices of its interval, as the budget allows."""

    name = "restream"
    title = "Restream"

    def __init__(self, ctx: AreaContext) -> None:
        s = ctx.settings
        self._ctx = ctx
        self.slices = spread_slices(s)
        self.poller = RestreamPoller(
            RestreamReader(ctx.client),
            ctx.store,
            ctx.clock,
            RESTREAM_SECTION.of(s),
            ctx.redactor,
            fingerprint_secret=fingerprint_secret(s.upstream),
            slices=self.slices,
        )

    def enabled(self, settings: Settings) -> bool:
        return RESTREAM_SECTION.of(settings).enabled

    def jobs(self, account: str) -> list[Job]:
        s = RESTREAM_SECTION.of(self._ctx.settings)
        budget = self._ctx.client.budget
        status = afforded(budget, account, self.name, lambda: 2, self.poller.poll)
        history = afforded(
            budget,
            account,
            self.name,
            lambda: len(self.poller.history_plan(account)),
            self.poller.poll_history,
        )
        return [
            Job(self.name, account, s.interval_seconds, status),
            Job(self.name, account, s.history_interval_seconds / self.slices, history, "history"),
        ]

    def forget(self, account: str) -> None:
        self.poller.forget(account)
