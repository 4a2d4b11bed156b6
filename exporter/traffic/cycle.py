"""One poll's read cycle of an account (``ReadCycle``): the first reads oldest first, the
settle reads due (``settle.SettleReads``), the audit, then publishing; what the poll did
(``Cycle``) and what the request budget lets it send (``Allowance``): a read the budget cannot
afford waits for a later poll, never cut in half."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import structlog

from exporter.areakit.metrics import AreaMetrics
from exporter.traffic import policy
from exporter.traffic.accounts import Accounts
from exporter.traffic.auditor import Auditor
from exporter.traffic.echo import WindowMismatch
from exporter.traffic.ledger import AccountLedger
from exporter.traffic.persist import Publisher
from exporter.traffic.read import Planned, Reader, postponement, send
from exporter.traffic.reply import TrafficSource
from exporter.traffic.runs import HALVES, Run
from exporter.traffic.settings import TrafficSettings
from exporter.traffic.settle import SettleReads
from exporter.traffic.skew import Clocks
from exporter.traffic.steps import on_worker, untied_task
from exporter.traffic.windows import MINUTE, ReadPlan, Window, chunks, plan_reads
from exporter.upstream.budget import Postponed
from exporter.upstream.errors import UpstreamError

log = structlog.get_logger("exporter.traffic")


class Budget(Protocol):
    """The account's request budget (RequestBudget has it): asked before a read is sent, so a
    read the budget cannot afford waits instead of being cut in half."""

    def affords(self, account: str, area: str, count: int) -> bool: ...

    def limit(self, account: str) -> float | None: ...

    def paused(self, account: str) -> bool: ...

    def frees_in(self, account: str, area: str, count: int) -> float | None: ...


class Doubted(Exception):
    """A first read's replies moved the platform's clock it was planned on: not counted."""


@dataclass
class Cycle:
    """What one poll of an account (``account``, its ledger ``led``, the host's time ``now``)
    did: the settle read in progress (``settled`` once it is complete, failed or waits; after a
    complete one the next run due is read), and whether a read that was owed had to wait for
    the budget or a rate limit."""

    account: str
    led: AccountLedger
    now: float
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

    def affords(self, count: int, cycle: Cycle) -> bool:
        """Whether the budget affords ``count`` requests now; if not, the cycle waits."""
        if self.can(cycle.account, count):
            return True
        self.wait(cycle, count)
        return False

    def frees_in(self, cycle: Cycle) -> float | None:
        """Seconds until the budget affords the read the cycle waited for; None without a
        budget, while the platform's limit pauses the account, or when it affords it now (the
        read waited for a reason of its own: the tick decides)."""
        if self._budget is None or not cycle.wanted:
            return None  # (the budget's own frees_in is None while paused)
        delay = self._budget.frees_in(cycle.account, "traffic", cycle.wanted)
        return delay if delay is not None and delay > 0 else None

    def wait(self, cycle: Cycle, count: int = 1) -> None:
        """The cycle waits for the budget (said as the platform's limit while paused by it)."""
        paused = self._budget is not None and self._budget.paused(cycle.account)
        cycle.wanted = count
        cycle.wait(
            UpstreamError("traffic", "budget", "backing off after a rate limit") if paused else None
        )


@dataclass(frozen=True)
class Parts:
    """What a poll's reads work with: the platform's metrics endpoint, the accounts' ledgers,
    the clocks, the read step, the budget's answers, the settings and self-metrics, and the
    audit (re-reads settled windows when nothing else is owed)."""

    client: TrafficSource
    accounts: Accounts
    clocks: Clocks
    reader: Reader
    allowance: Allowance
    settings: TrafficSettings
    metrics: AreaMetrics
    auditor: Auditor | None


class ReadCycle:
    """One poll of an account: the first reads of the minutes ready, oldest first, the settle
    reads due (``SettleReads``), the audit when nothing waits, then the fragment published and
    what is owed said. A failed request raises and leaves cursor and counters as they were."""

    def __init__(self, parts: Parts, publisher: Publisher) -> None:
        self._client = parts.client
        self._accounts = parts.accounts
        self._clocks = parts.clocks
        self._reader = parts.reader
        self._allowance = parts.allowance
        self._settings = parts.settings
        self._metrics = parts.metrics
        self._auditor = parts.auditor
        self._publisher = publisher
        self._settles = SettleReads(parts)

    async def run(self, account: str, now: float) -> float | None:
        """One poll of ``account`` at ``now``; returns the seconds until the budget affords
        the read it held back (None: the next tick decides)."""
        self._accounts.drop_released(now)
        led = self._accounts.state(account).ledger
        if led.released_at:
            self._accounts.resume(account, led, self._clocks.ready_time(now))
        cycle = Cycle(account, led, now)
        try:
            await self._reads(cycle)
        except BaseException as failure:
            # What was counted before the failure is still published, and what is owed
            # still said (a poll failing for an hour leaves its minutes past their ages);
            # a failure to do so is logged and never replaces the poll's own error.
            try:
                self._report_owed(cycle)
                await self._publisher.publish(account, led, now, ok=False)
            except Exception as exc:
                log.error(
                    "traffic_publish_failed",
                    error=f"{type(exc).__name__}: {exc}",
                    poll_error=type(failure).__name__,
                )
            raise
        refused = cycle.refused is not None and not cycle.read
        self._report_owed(cycle)
        await self._publisher.publish(account, led, now, ok=not refused)
        delay = None
        if cycle.postponed:  # resumed next poll; nothing owed is dropped
            self._metrics.polls_postponed.labels("traffic").inc()
            delay = None if cycle.refused is not None else self._allowance.frees_in(cycle)
        if refused and cycle.refused is not None:
            # The platform refuses every read: the poll fails (cdnvideo_up 0), while the
            # reads stay owed and no settle run counts a failure.
            raise UpstreamError("traffic", "http", f"rate limited: {cycle.refused.message}", 429)
        return delay

    async def _reads(self, cycle: Cycle) -> None:
        """The first reads, the settle reads due, then the audit unless a read waits."""
        await self._first_reads(cycle)
        # First reads waiting for requests the budget gives back leave a settle read what
        # they cannot use; the poll still waits for the first reads.
        waiting, wanted = cycle.first_reads_wait and cycle.refused is None, cycle.wanted
        if waiting:
            cycle.postponed = False
        await self._settles.due(cycle)
        if waiting:
            cycle.postponed, cycle.wanted = True, wanted
        if self._auditor is not None and not cycle.postponed:
            # its requests and lines are the audit's own (they name the account)
            audit = self._auditor.step(cycle.account, long_windows=not cycle.led.long_refused)
            await untied_task(audit)

    def _report_owed(self, cycle: Cycle) -> None:
        """The settle reads due and not yet done: how many minutes, and how long overdue."""
        led = cycle.led
        minutes, overdue = led.owed_minutes(
            self._clocks.ready_time(cycle.now), policy.stages(self._settings, led)
        )
        self._metrics.traffic_windows_owed.labels(cycle.account).set(minutes)
        self._metrics.traffic_settle_overdue.labels(cycle.account).set(overdue)

    def _halves(self) -> tuple[str, ...]:
        return HALVES if self._settings.per_resource else HALVES[:1]

    def _plan(self, cycle: Cycle, ready: float, probing: bool) -> tuple[ReadPlan, bool]:
        """The first reads to do (``plan_reads``), and whether catch-up was lifted for a
        probe; minutes past catch-up are given up (counted ``missed``)."""
        s, led, account = self._settings, cycle.led, cycle.account
        longest = 1 if led.outage or probing else policy.longest(led, cycle.now)
        catch_up = s.catch_up_minutes
        if probing and led.cursor is not None:
            # Minutes are given up beyond catch-up on the platform's confirmed clock only: ours
            # may be far ahead (a restart after a step), so every minute owed is kept and the
            # oldest probed first, surely closed on the platform's clock; once it confirms the
            # clock, the rest is planned again on it (``replan``).
            catch_up = max(catch_up, int(ready - led.cursor) // MINUTE)
        lifted = catch_up != s.catch_up_minutes
        plan = plan_reads(led.cursor, ready, s.delay_seconds, catch_up, longest)
        if plan.missed and led.cursor is not None:
            log.warning(
                "traffic_minutes_missed",
                minutes=plan.missed,
                after=str(Window(led.cursor, led.cursor + MINUTE)),
                catch_up_minutes=s.catch_up_minutes,
            )
            led.cursor += plan.missed * MINUTE
            led.dirty = True
            self._metrics.traffic_windows.labels(account, "missed").inc(plan.missed)
        return plan, lifted

    async def _first_reads(self, cycle: Cycle, replans: int = 2) -> None:
        """Read the ready minutes oldest first. A settle read that fell due before the oldest
        of them goes first while the budget affords it and the first reads of every minute
        ready now too (what is owed longest first); else the first reads go first and the
        settle read gets what the budget leaves (a budget below the cost never starves first
        reads, and first reads behind catch up). A read the
        budget cannot afford, or that meets a rate limit, waits for the next poll."""
        led, now = cycle.led, cycle.now
        # After a failed 1-minute read (an outage) the next read is one minute: a probe. So
        # are first reads until the platform's clock is confirmed (``_probing``): the oldest
        # minute owed first, the likeliest to be closed whatever our clock says.
        probing = self._clocks.probing()
        ready = self._clocks.ready_time(now)  # closed on the platform's clock as confirmed
        plan, lifted = self._plan(cycle, ready, probing)
        outcome = "backfilled" if plan.backfill else "read"
        queue = list(plan.windows)
        cap_before = (led.slow_cap, led.slow_until)
        while queue:
            w = queue[0]
            if not await self._settle_first(cycle, ready, w, len(queue)):
                return
            if not self._allowance.affords(len(self._halves()), cycle):
                cycle.first_reads_wait = True
                return
            queue.pop(0)
            last = queue[-1] if queue else w
            try:
                await self._fetch(cycle, w, Planned(now, ready, self._clocks.doubts))
            except Doubted:
                # The replies moved the platform's clock (or say it is off and are not yet
                # confirmed): this window was chosen on the wrong clock, and may hold minutes
                # not closed on the platform's. Plan again; never counted as it is.
                if replans:
                    await self._first_reads(cycle, replans - 1)
                return
            except UpstreamError as exc:
                if postponement(exc):
                    cycle.wait(exc)
                    return
                queue = self._narrowed(cycle, w, last, exc, cap_before)
                continue
            replan = False
            if led.outage or (probing and not self._clocks.probing()):
                # the probe was answered (the clock confirmed): the rest in full-size windows
                replan = probing and lifted
                led.outage = probing = False
                if queue:
                    queue = list(chunks(queue[0].start, last.last_minute, policy.longest(led, now)))
            cycle.read = True
            self._metrics.traffic_windows.labels(cycle.account, outcome).inc(w.minutes)
            log.debug("traffic_window_read", window=str(w), outcome=outcome)
            if replan:  # catch-up was lifted for the probe: planned again on the confirmed clock
                await self._first_reads(cycle, replans)
                return

    async def _settle_first(self, cycle: Cycle, ready: float, w: Window, windows: int) -> bool:
        """A settle read that fell due before the oldest minute of ``w`` became ready, read
        first, leaving room for the ``windows`` first reads ready now (a backlog is read
        first); False: it waits, and so does the poll."""
        led = cycle.led
        if not cycle.settled and led.pending:
            # Read on the loop, not the worker: no other step of this account runs now,
            # and a hop here would let other areas' polls take the budget first.
            ages = policy.stages(self._settings, led)
            run = cycle.run or led.due(ready, ages, cycle.aside)
            if run is not None and run.due_at(ages) <= self._ready_at(w):
                leave = len(self._halves()) * windows
                await self._settles.one(cycle, run, leave)
                if cycle.postponed:
                    return False
        return True

    def _narrowed(
        self,
        cycle: Cycle,
        w: Window,
        last: Window,
        exc: UpstreamError,
        cap_before: tuple[int, float],
    ) -> list[Window]:
        """The first reads left after ``w`` failed with ``exc``, in shorter windows (after a
        refusal, one minute; after a timeout, half); raises ``exc`` when even one minute
        failed (an outage: the window size was not the problem)."""
        led = cycle.led
        if isinstance(exc, WindowMismatch):
            self._metrics.traffic_windows.labels(cycle.account, "mismatched").inc(w.minutes)
        if policy.refusal(exc) and w.minutes > 1:
            policy.refuse_long(led, w, exc)
            return list(chunks(w.start, last.last_minute, 1))
        if policy.slow(exc) and w.minutes > 1:  # try half the window at once, down to 1
            policy.shrink(led, w, exc, cycle.now)
            return list(chunks(w.start, last.last_minute, led.slow_cap))
        if w.minutes == 1:
            # Even one minute failed: the size was not the problem.
            led.slow_cap, led.slow_until = cap_before
            led.outage = True
        raise exc

    def _ready_at(self, w: Window) -> float:
        """When the oldest minute of ``w`` became ready (on the clock ``_ready_time`` gives)."""
        return w.start + MINUTE + self._settings.delay_seconds

    async def _fetch(self, cycle: Cycle, w: Window, planned: Planned) -> None:
        """A first read of ``w``: both halves counted, or nothing (raises the first error;
        ``Doubted``: the replies moved the clock it was planned on)."""
        sent = await send(self._client, cycle.account, w, self._halves())
        read = await on_worker(self._reader.first, cycle.account, cycle.led, sent, planned)
        if read.error is not None:
            raise read.error
        if read.doubted:
            raise Doubted
