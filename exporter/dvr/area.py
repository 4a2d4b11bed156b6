"""The DVR area as the daemon runs it: the configured streams, read in slices of the interval."""

from __future__ import annotations

from exporter.areakit import AreaContext, Job, QuietArea, afforded, spread_slices
from exporter.config import Settings
from exporter.dvr.poller import DvrPoller
from exporter.dvr.settings import DVR_SECTION


class DvrArea(QuietArea):
    """The configured DVR streams of each account, read in slices of the interval."""

    name = "dvr"
    title = "Network DVR"

    def __init__(self, ctx: AreaContext) -> None:
        s = ctx.settings
        self._ctx = ctx
        self.slices = spread_slices(s)  # runs per interval
        streams = {a.name: a.dvr_streams for a in (s.accounts or ())}
        # each run reads one slice in turn: all of them once in dvr.poll_slices intervals
        self.poller = DvrPoller(
            ctx.client,
            ctx.store,
            ctx.clock,
            DVR_SECTION.of(s),
            streams,
            self.slices * DVR_SECTION.of(s).poll_slices,
        )

    def enabled(self, settings: Settings) -> bool:
        return DVR_SECTION.of(settings).enabled

    def jobs(self, account: str) -> list[Job]:
        dvr = afforded(
            self._ctx.client.budget,
            account,
            self.name,
            lambda: len(self.poller.due(account)),
            self.poller.poll,
        )
        return [
            Job(
                self.name,
                account,
                DVR_SECTION.of(self._ctx.settings).interval_seconds / self.slices,
                dvr,
            )
        ]

    def serve(self, accounts: tuple[str, ...]) -> None:
        """Take the configured streams anew (a reload may have changed them)."""
        configured = self._ctx.settings.accounts or ()
        self.poller.set_streams({a.name: a.dvr_streams for a in configured})

    def asks_platform(self, account: str) -> bool:
        return bool(self.poller.streams(account))

    def forget(self, account: str) -> None:
        self.poller.forget(account)
