"""The registry of polled areas: each wraps its pollers as an ``Area`` the Service loops over."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, TypeVar

from exporter.config import Settings
from exporter.runtime.area import Area, Job
from exporter.traffic.history import TrafficHistory
from exporter.traffic.history_file import HistoryFile, charts_path

if TYPE_CHECKING:
    from exporter.dvr import DvrPoller
    from exporter.restream import RestreamPoller
    from exporter.runtime.context import Context
    from exporter.talking_head import TalkingHeadPoller
    from exporter.talking_head.tasks import TaskTracker
    from exporter.traffic import TrafficPoller
    from exporter.upstream.budget import RequestBudget

TRAFFIC_TICK_SECONDS = 15.0
# With a request budget, restream history and DVR jobs run this many times per interval, each
# run reading its share, so their requests are spread over the interval instead of a burst.
SPREAD_SLICES = 6


def spread_slices(settings: Settings) -> int:
    """How many runs an interval of restream history and DVR jobs is cut into."""
    return SPREAD_SLICES if settings.upstream.max_requests_per_minute else 1


def afforded(
    budget: RequestBudget,
    account: str,
    area: str,
    cost: Callable[[], int],
    poll: Callable[[str], Awaitable[None]],
) -> Callable[[], Awaitable[None]]:
    """``poll(account)``, postponed whole (Postponed raised, and counted) when the request
    budget cannot afford its ``cost()`` requests, rather than cut short."""

    async def run() -> None:
        n = cost()
        if n and not budget.affords(account, area, n):
            budget.postpone(account, area)
        await poll(account)

    return run


class _Area:
    """What most areas share: nothing to do when the served accounts change or at shutdown."""

    def serve(self, accounts: tuple[str, ...]) -> None:
        pass

    def asks_platform(self, account: str) -> bool:
        return True

    def stop(self) -> None:
        pass


class TrafficArea:
    """``/app/metrics/v1/`` counters, and the last hour of windows for the landing charts.

    Traffic draws on the request budget request by request (it may use all of it)."""

    name = "traffic"
    title = "Traffic"

    def __init__(self, ctx: Context) -> None:
        from exporter.traffic import TrafficPoller

        self._ctx = ctx
        self.poller: TrafficPoller = TrafficPoller(
            ctx.client,
            ctx.store,
            ctx.metrics,
            ctx.clock,
            ctx.settings.traffic,
            budget=ctx.client.budget,
        )
        self.history = TrafficHistory()
        ctx.store.listen(self.history.record)
        self.history_file = HistoryFile(self.history, charts_path(ctx.settings.traffic.state_file))
        self.history_file.load(ctx.clock.time())

    def enabled(self, settings: Settings) -> bool:
        return settings.traffic.enabled

    def jobs(self, account: str) -> list[Job]:
        async def poll() -> None:
            try:
                await self.poller.poll(account)
            finally:
                self.history_file.save(self._ctx.clock.time())

        return [Job(self.name, account, TRAFFIC_TICK_SECONDS, poll)]

    def serve(self, accounts: tuple[str, ...]) -> None:
        if self.enabled(self._ctx.settings):
            for account in accounts:
                self._ctx.metrics.start_traffic_account(account)
        self.poller.serve(accounts)

    def asks_platform(self, account: str) -> bool:
        return True

    def forget(self, account: str) -> None:
        # Still this replica's by the shard: gone from the account list, not moved.
        self.poller.forget(account, moved=not self._ctx.settings.shard.owns(account))
        self.history.forget(account)

    def stop(self) -> None:
        self.poller.save_state()
        self.history_file.save(self._ctx.clock.time(), force=True)


class RestreamArea(_Area):
    """Restream status every interval; history in slices of its interval, as the budget allows."""

    name = "restream"
    title = "Restream"

    def __init__(self, ctx: Context) -> None:
        from exporter.restream import RestreamPoller
        from exporter.restream.identity import fingerprint_secret

        s = ctx.settings
        self._ctx = ctx
        self.slices = spread_slices(s)
        self.poller: RestreamPoller = RestreamPoller(
            ctx.client,
            ctx.store,
            ctx.clock,
            s.restream,
            ctx.redactor,
            fingerprint_secret=fingerprint_secret(s.upstream),
            slices=self.slices,
        )

    def enabled(self, settings: Settings) -> bool:
        return settings.restream.enabled

    def jobs(self, account: str) -> list[Job]:
        s = self._ctx.settings.restream
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


class DvrArea(_Area):
    """The configured DVR streams of each account, read in slices of the interval."""

    name = "dvr"
    title = "Network DVR"

    def __init__(self, ctx: Context) -> None:
        from exporter.dvr import DvrPoller

        s = ctx.settings
        self._ctx = ctx
        self.slices = spread_slices(s)  # runs per interval
        streams = {a.name: a.dvr_streams for a in (s.accounts or ())}
        # each run reads one slice in turn: all of them once in dvr.poll_slices intervals
        self.poller: DvrPoller = DvrPoller(
            ctx.client, ctx.store, ctx.clock, s.dvr, streams, self.slices * s.dvr.poll_slices
        )

    def enabled(self, settings: Settings) -> bool:
        return settings.dvr.enabled

    def jobs(self, account: str) -> list[Job]:
        dvr = afforded(
            self._ctx.client.budget,
            account,
            self.name,
            lambda: len(self.poller.due(account)),
            self.poller.poll,
        )
        return [Job(self.name, account, self._ctx.settings.dvr.interval_seconds / self.slices, dvr)]

    def serve(self, accounts: tuple[str, ...]) -> None:
        """Take the configured streams anew (a reload may have changed them)."""
        configured = self._ctx.settings.accounts or ()
        self.poller.set_streams({a.name: a.dvr_streams for a in configured})

    def asks_platform(self, account: str) -> bool:
        return bool(self.poller.streams(account))

    def forget(self, account: str) -> None:
        self.poller.forget(account)


class TalkingHeadArea(_Area):
    """Talking-head quota and catalogue, and the tasks submitted through the admin surface.

    The admin surface uses it directly: the cached catalogue (``poller``) to check generate
    requests, ``tracker`` to follow the tasks it submits, ``refresh_quota`` after one."""

    name = "talking_head"
    title = "Talking head"

    def __init__(self, ctx: Context) -> None:
        from exporter.talking_head import TalkingHeadPoller
        from exporter.talking_head.tasks import TaskTracker

        self._ctx = ctx
        self.poller: TalkingHeadPoller = TalkingHeadPoller(
            ctx.client, ctx.store, ctx.clock, ctx.settings.talking_head
        )
        self.tracker: TaskTracker = TaskTracker(ctx)

    def enabled(self, settings: Settings) -> bool:
        return settings.talking_head.enabled

    def jobs(self, account: str) -> list[Job]:
        th = afforded(self._ctx.client.budget, account, self.name, lambda: 1, self.poller.poll)
        return [Job(self.name, account, self._ctx.settings.talking_head.interval_seconds, th)]

    async def refresh_quota(self, account: str) -> None:
        """Poll the account's configurations now (after a generate spent quota)."""
        await self._ctx.runner.run(self.name, account, lambda: self.poller.poll(account))

    def forget(self, account: str) -> None:
        self.poller.forget(account)
        self.tracker.forget(account)


# The registry: every polled area, in the order pages and documents list them.
REGISTRY = (TrafficArea, RestreamArea, DvrArea, TalkingHeadArea)
AREA_NAMES = tuple(kind.name for kind in REGISTRY)

A = TypeVar("A")


class Areas:
    """The areas of one running exporter, built once from the registry."""

    def __init__(self, ctx: Context) -> None:
        self._areas: tuple[Area, ...] = tuple(kind(ctx) for kind in REGISTRY)
        self._ctx = ctx

    def __iter__(self) -> Iterator[Area]:
        return iter(self._areas)

    def enabled(self) -> list[Area]:
        return [a for a in self._areas if a.enabled(self._ctx.settings)]

    def get(self, kind: type[A]) -> A:
        """The area of this class (typed access for the parts that use one area directly)."""
        for area in self._areas:
            if isinstance(area, kind):
                return area
        raise LookupError(kind.__name__)

    @property
    def traffic(self) -> TrafficArea:
        return self.get(TrafficArea)

    @property
    def talking_head(self) -> TalkingHeadArea:
        return self.get(TalkingHeadArea)

    @property
    def dvr(self) -> DvrArea:
        return self.get(DvrArea)
