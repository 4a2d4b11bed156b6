"""What a polled area is to the daemon: a name, a switch, typed jobs per account, forgetting;
and the context it is built from (the runtime's ``Context`` fits, seen through a protocol)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from exporter.areakit.metrics import AreaMetrics
from exporter.config import Settings
from exporter.exposition import Store
from exporter.support.clock import Clock
from exporter.support.logs import Redactor
from exporter.upstream import Operations, UpstreamClient
from exporter.upstream.budget import RequestBudget

# With a request budget, restream history and DVR jobs run this many times per interval, each
# run reading its share, so their requests are spread over the interval instead of a burst.
SPREAD_SLICES = 6


@dataclass(frozen=True)
class Job:
    """One poll of one account, run every ``seconds`` through the PollRunner.

    ``name`` tells apart the jobs of one area (restream's ``history``); the area's own job has
    none. ``cdnvideo_up`` of the area is 1 while all its jobs of the account succeed.
    """

    area: str
    account: str
    seconds: float
    poll: Callable[[], Awaitable[None]]
    name: str = ""
    # After each run: when (wall clock) to run again before the next tick, if sooner; None: at
    # the tick (the traffic area: the instant its budget affords a read it held back).
    again: Callable[[], float | None] | None = None


class NothingToWatch(Exception):
    """Raised by a poll with nothing to ask the platform for this account (DVR without
    streams): the area is "not configured" for it, never up; ``what`` says what to configure."""

    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what


class Runner(Protocol):
    """Runs one poll with the accounting every poll gets (``exporter.runtime.PollRunner``)."""

    async def run(
        self, area: str, account: str, poll: Callable[[], Awaitable[None]], job: str = ""
    ) -> bool: ...


class AreaContext(Protocol):
    """What an area uses of the running exporter (``exporter.runtime.Context`` fits)."""

    @property
    def settings(self) -> Settings: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def store(self) -> Store: ...

    @property
    def metrics(self) -> AreaMetrics: ...

    @property
    def runner(self) -> Runner: ...

    @property
    def client(self) -> UpstreamClient: ...

    @property
    def ops(self) -> Operations: ...

    @property
    def redactor(self) -> Redactor: ...


class Area(Protocol):
    """One polled part of the platform (traffic, restream, DVR, talking head).

    The Service loops over the areas of the registry (``exporter.runtime.registry``): it
    schedules ``jobs(account)`` of every enabled area for each account this replica serves,
    tells every area which accounts it serves now (``serve``), and calls ``forget(account)``
    when an account leaves this replica, after which the area keeps nothing of that account
    (traffic keeps the account's ledger, released, for ``series_retention_hours``: see
    docs/windowing.md). ``stop`` is awaited at shutdown (traffic saves its state file).
    """

    name: str
    title: str  # as the landing page shows it

    def enabled(self, settings: Settings) -> bool: ...

    def jobs(self, account: str) -> list[Job]: ...

    def serve(self, accounts: tuple[str, ...]) -> None: ...

    def forget(self, account: str) -> None: ...

    async def stop(self) -> None: ...


class QuietArea:
    """What most areas share: nothing to do when the served accounts change or at shutdown."""

    def serve(self, accounts: tuple[str, ...]) -> None:
        pass

    async def stop(self) -> None:
        pass


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
