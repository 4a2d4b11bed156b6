"""The DVR area as the daemon runs it: the configured streams, read in slices of the interval."""

from __future__ import annotations

from exporter.areakit import AreaContext, Job, NothingToWatch, QuietArea, afforded, spread_slices
from exporter.config import Settings
from exporter.dvr.poller import DvrPoller, store_key
from exporter.dvr.reply import DvrReader
from exporter.dvr.settings import DVR_SECTION

# What the landing page and /readyz say of an account without DVR streams.
NOT_CONFIGURED = (
    "no DVR stream is listed for this account: name them in its `dvr_streams` under "
    "`accounts` (a discovered account has none: list it there), or set `dvr.enabled: false`"
)


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
            DvrReader(ctx.client),
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

        async def poll() -> None:
            if not self.poller.streams(account):  # none listed (or a reload took them away)
                self.poller.forget(account)
                self._ctx.store.drop(store_key(account))
                raise NothingToWatch(NOT_CONFIGURED)
            await dvr()

        return [
            Job(
                self.name,
                account,
                DVR_SECTION.of(self._ctx.settings).interval_seconds / self.slices,
                poll,
            )
        ]

    def serve(self, accounts: tuple[str, ...]) -> None:
        """Take the configured streams anew (a reload may have changed them)."""
        configured = self._ctx.settings.accounts or ()
        self.poller.set_streams({a.name: a.dvr_streams for a in configured})

    def forget(self, account: str) -> None:
        self.poller.forget(account)
