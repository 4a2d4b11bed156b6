"""What one poll of an account did (``Cycle``) and what the request budget lets it send
(``Allowance``): a read the budget cannot afford waits for a later poll, never cut in half."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from exporter.traffic.runs import Run
from exporter.upstream.budget import Postponed
from exporter.upstream.errors import UpstreamError


class Budget(Protocol):
    """The account's request budget (RequestBudget has it): asked before a read is sent, so a
    read the budget cannot afford waits instead of being cut in half."""

    def affords(self, account: str, area: str, count: int) -> bool: ...

    def limit(self, account: str) -> float | None: ...

    def paused(self, account: str) -> bool: ...

    def frees_in(self, account: str, area: str, count: int) -> float | None: ...


@dataclass
class Cycle:
    """What one poll of an account did: the settle read in progress (``settled`` once it is
    complete, failed or waits; after a complete one the next run due is read), and whether a
    read that was owed had to wait for the budget or a rate limit."""

    run: Run | None = None  # the run whose settle read this poll works on
    settled: bool = False  # its read is complete, failed or waits
    complete: bool = False  # ... complete: the next run due may be read in the same poll
    postponed: bool = False
    aside: list[Run] = field(default_factory=list)  # read on a doubted clock: next poll
    read: bool = False  # a first read was counted or a settle half read
    refused: UpstreamError | None = None  # the platform's rate limit made a read wait
    wanted: int = 0  # the requests of the read the budget made wait
    first_reads_wait: bool = False  # the budget made the first reads wait (``wanted``)

    def wait(self, exc: UpstreamError | None = None) -> None:
        """A read owed waits for a later poll; ``exc``: because of the platform's limit."""
        self.postponed = True
        if exc is not None and (not isinstance(exc, Postponed) or exc.paused):
            self.refused = exc


class Allowance:
    """The budget's answers for one area's reads (none: every read is afforded)."""

    def __init__(self, budget: Budget | None) -> None:
        self._budget = budget

    def can(self, account: str, count: int, leave: int = 0) -> bool:
        """Whether the budget affords ``count`` requests now (nothing else happens); with
        ``leave``, and that many more after them within the same minute."""
        if self._budget is None:
            return True
        if leave:
            limit = self._budget.limit(account)
            if limit is not None and count + leave > limit:
                return False
        return self._budget.affords(account, "traffic", count + leave)

    def affords(self, account: str, count: int, cycle: Cycle) -> bool:
        """Whether the budget affords ``count`` requests now; if not, the cycle waits."""
        if self.can(account, count):
            return True
        self.wait(account, cycle, count)
        return False

    def frees_in(self, account: str, cycle: Cycle) -> float | None:
        """Seconds until the budget affords the read the cycle waited for; None without a
        budget, while the platform's limit pauses the account, or when it affords it now (the
        read waited for a reason of its own: the tick decides)."""
        if self._budget is None or not cycle.wanted:
            return None  # (the budget's own frees_in is None while paused)
        delay = self._budget.frees_in(account, "traffic", cycle.wanted)
        return delay if delay is not None and delay > 0 else None

    def wait(self, account: str, cycle: Cycle, count: int = 1) -> None:
        """The cycle waits for the budget (said as the platform's limit while paused by it)."""
        paused = self._budget is not None and self._budget.paused(account)
        cycle.wanted = count
        cycle.wait(
            UpstreamError("traffic", "budget", "backing off after a rate limit") if paused else None
        )
