"""Reads closed minutes of /app/metrics/v1/ per account, settles late data, publishes counters."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeVar

import structlog

from exporter.areakit.metrics import AreaMetrics
from exporter.exposition import Fragment, Store, StoreKey
from exporter.support import offloop
from exporter.support.clock import Clock
from exporter.support.hoststep import HostClockWatch
from exporter.traffic import exposure, state
from exporter.traffic.auditor import Auditor
from exporter.traffic.echo import WindowMismatch, check_echo, stating
from exporter.traffic.families import Latest, View, build_fragment, exported_keys
from exporter.traffic.final import FinalMinutes, tell
from exporter.traffic.ledger import HALVES, AccountLedger, Run, requests
from exporter.traffic.parse import ResourceRow, Row, merge, parse_resources, parse_totals
from exporter.traffic.select import ResourceSelector, fold
from exporter.traffic.settings import TrafficSettings
from exporter.traffic.skew import SKEW_CONFIRMATIONS, PlatformClock
from exporter.traffic.windows import (
    MAX_WINDOW_MINUTES,
    MINUTE,
    Window,
    chunks,
    last_ready_minute,
    plan_reads,
    settle_cap_minutes,
)
from exporter.upstream.budget import Postponed
from exporter.upstream.errors import UpstreamError
from exporter.upstream.models import MetricsReply

log = structlog.get_logger("exporter.traffic")

# A traffic fragment not refreshed for this long (the upstream failing) leaves /metrics.
FRAGMENT_MAX_AGE_SECONDS = 600.0
# After a 504 or a timeout the longest window is halved for this long, then tried in full.
SLOW_HOLD_SECONDS = 3600.0
# A run whose settle reads the platform failed (while it answered other reads of the account)
# at least this often and for at least this long is given up. Postponed reads never count.
SETTLE_ATTEMPTS = 5
SETTLE_GIVE_UP_SECONDS = 6 * 3600.0
SETTLE_BACKOFF_MAX_SECONDS = 900.0
# A rejected clock reading is logged at most once in this many seconds (always counted).
CLOCK_REJECTED_LOG_SECONDS = 60.0
# A state file that cannot be written is logged at most this often.
SAVE_FAILURE_LOG_SECONDS = 600.0
# A rejected upstream value is logged at most once per field in this many seconds.
REJECTED_LOG_SECONDS = 3600.0
# Unsettled runs this long past due (settle reads failing) are given up (their late data lost).
GIVE_UP_MINUTES_AT_LEAST = 1440

Fetched = tuple[Row, dict[str, ResourceRow]]


def _slow(exc: UpstreamError) -> bool:
    """The platform gave up on the window ("Request execution timeout exceeded") or we did."""
    return exc.kind == "timeout" or exc.status == 504


T = TypeVar("T")


def _final(run: Run, led: AccountLedger, stages: tuple[int, ...]) -> bool:
    """``run`` left the ledger after its last settle age (not joined into another run)."""
    return run not in led.pending and run.next_age(stages) <= run.settled


# Why an account's ledger is released (the log's reason). MOVED: the minutes meanwhile are
# another replica's to count (read on from the newest minute when it comes back); the others:
# nobody counts them meanwhile (read from the ledger's cursor when it comes back).
Release = Literal[
    "moved to another shard", "removed from the config", "no longer listed by discovery"
]
MOVED: Release = "moved to another shard"
REMOVED: Release = "removed from the config"
UNLISTED: Release = "no longer listed by discovery"


@dataclass
class AccountState:
    """All the poller keeps of one account. The ledger (and which resources it folds) outlives
    a move to another replica for ``series_retention_hours`` so counters continue if the
    account comes back; the rest is dropped when the account leaves (``forget``)."""

    ledger: AccountLedger
    folded: frozenset[str] = frozenset()  # resources folded into __other__ at the last count
    latest: Latest | None = None  # the last window read
    fragment: Fragment | None = None  # the last fragment built
    stale: bool = False  # ``fragment`` was built with a view a reload replaced since
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)  # one cycle at a time


class TrafficSource(Protocol):
    """The one upstream call the poller needs (UpstreamClient has it; tests pass a fake)."""

    async def traffic(
        self,
        account: str,
        start: float,
        end: float,
        per_resource: bool,
        metrics: Sequence[str] = (),
        resource: str | None = None,
    ) -> MetricsReply: ...


class Budget(Protocol):
    """The account's request budget (RequestBudget has it): asked before a read is sent, so a
    read the budget cannot afford waits instead of being cut in half."""

    def affords(self, account: str, area: str, count: int) -> bool: ...

    def limit(self, account: str) -> float | None: ...

    def paused(self, account: str) -> bool: ...


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

    def wait(self, exc: UpstreamError | None = None) -> None:
        """A read owed waits for a later poll; ``exc``: because of the platform's limit."""
        self.postponed = True
        if exc is not None and (not isinstance(exc, Postponed) or exc.paused):
            self.refused = exc


def postponement(exc: UpstreamError) -> bool:
    """Not the platform failing the window: our budget, or its rate limit (429, a 420 or 200
    body about a rate limit, with or without Retry-After). The read waits; never a failure."""
    return isinstance(exc, Postponed) or exc.rate_limited


class TrafficPoller:
    """Per account: a cursor of accounted minutes, cumulative counters, a ledger of unsettled
    runs; each ``poll`` reads what became ready, re-reads the runs due, and publishes
    ``traffic/<account>``. A failed request raises and leaves cursor and counters as they were.

    Requests run on the event loop; everything that grows with the number of resources (parsing
    replies, counting, settling, building the fragment, the state snapshot) runs on one worker
    thread, so ``/metrics`` and ``/healthz`` keep answering during a refresh, and the ledgers
    are never read and written at the same time (the worker does one step at a time).
    """

    def __init__(
        self,
        client: TrafficSource,
        store: Store,
        metrics: AreaMetrics,
        clock: Clock,
        settings: TrafficSettings,
        budget: Budget | None = None,
        auditor: Auditor | None = None,
    ) -> None:
        self._client = client
        self._auditor = auditor  # re-reads settled windows when nothing else is owed
        self._budget = budget
        self._store = store
        self._metrics = metrics
        self._clock = clock
        self._settings = settings
        self._view = View.of(
            store.selection, settings.resource_status_codes, settings.resource_request_times
        )
        self._selected = self._view  # the newest view asked for (``reselect``)
        self._select = ResourceSelector(
            settings.resources_include, settings.resources_exclude, settings.max_resources
        )
        rejected: list[str] = []
        ledgers = state.load(settings.state_file, rejected) if settings.state_file else {}
        metrics.state_entries_rejected.inc(len(rejected))
        self._accounts = {name: AccountState(led) for name, led in ledgers.items()}
        self._on_disk = bool(ledgers)  # a snapshot a restart would load exists
        self._unsaved = False
        self._rejected_logged: dict[str, float] = {}
        self._save_failure_logged = 0.0  # when a failed save was last logged (0 = saving works)
        self._platform = PlatformClock()  # the platform's clock minus ours, once confirmed
        self._host = HostClockWatch()  # our clock's steps not yet confirmed by the platform
        self._undated = False  # a metrics reply came without a Date header
        self._doubts = 0  # readings that disagreed with the believed clock (taken before/after)
        self._clock_rejected_logged = -math.inf
        self._worker = offloop.WORKER  # shared with the other pollers and the renderer
        # Told each run of minutes once it is final (remote write). While set, runs are kept
        # to one minute, so what it is told is the platform's own figure for each minute.
        self.final_minutes: FinalMinutes | None = None

    def ledger(self, account: str) -> AccountLedger:
        """The account's ledger (created empty on first use); for diagnostics and tests."""
        return self._state(account).ledger

    def _state(self, account: str) -> AccountState:
        st = self._accounts.get(account)
        if st is None:
            st = self._accounts[account] = AccountState(AccountLedger())
        return st

    def state(self, account: str) -> AccountState | None:
        """What the poller keeps of ``account`` (None: nothing); for diagnostics and tests."""
        return self._accounts.get(account)

    # -- accounts served -----------------------------------------------------------------------
    def serve(self, accounts: Iterable[str]) -> None:
        """The accounts this replica serves now. The ledgers of the others (moved to another
        replica, or gone) are kept, in memory and in the state file, for
        ``series_retention_hours``, then dropped; an account that comes back meanwhile
        continues its counters (``_resume``). Accounts not released by ``forget`` first are
        taken as moved."""
        now = self._clock.time()
        owned = set(accounts)
        for name in [n for n in self._accounts if n not in owned]:
            self._release(name, now, MOVED)
        self._drop_released(now)

    def held(self) -> tuple[str, ...]:
        """The accounts whose ledgers are held and not released (at start: those the state
        file holds as served), sorted."""
        return tuple(sorted(n for n, st in self._accounts.items() if not st.ledger.released_at))

    def forget(self, account: str, reason: Release = MOVED) -> None:
        """The account left this replica (``reason``: MOVED, another replica serves it now;
        else it is gone from the account list): release its ledger (kept for
        ``series_retention_hours``, see ``serve``) and drop everything else kept of it."""
        st = self._accounts.get(account)
        if st is not None:
            self._release(account, self._clock.time(), reason)

    def _release(self, name: str, now: float, reason: Release) -> None:
        st = self._accounts[name]
        if st.ledger.released_at:
            return
        st.ledger.released_at = now
        st.ledger.released_moved = reason == MOVED
        self._unsaved = True
        self._accounts[name] = AccountState(st.ledger, st.folded)
        if self._auditor is not None:  # the audit is this replica's: it goes with the account
            self._auditor.forget(name)
        log.info(
            "traffic_account_released",
            account=name,
            reason=reason,
            kept_hours=self._settings.series_retention_hours,
        )

    def _drop_released(self, now: float) -> None:
        keep = self._settings.series_retention_hours * 3600
        for name in [
            n
            for n, st in self._accounts.items()
            if st.ledger.released_at and now > st.ledger.released_at + keep
        ]:
            del self._accounts[name]
            self._unsaved = True
            log.info("traffic_account_dropped", account=name)

    def _resume(self, account: str, led: AccountLedger, now: float) -> None:
        """An account served again. Back from another replica: the minutes in between were
        that replica's to count; read on from the newest ready minute, counters continued.
        Back in the account list: the minutes missed are read from the ledger's cursor (up to
        ``catch_up_minutes``, the rest counted as missed) and counted once."""
        moved, led.released_moved = led.released_moved, False
        led.released_at = 0.0
        led.dirty = True
        last = last_ready_minute(self._ready_time(now), self._settings.delay_seconds)
        if led.cursor is None or led.cursor >= last - MINUTE:
            return
        missed = (last - MINUTE - led.cursor) // MINUTE
        if not moved:
            log.info("traffic_account_resumed", account=account, minutes_to_read=missed + 1)
            return
        led.cursor = last - MINUTE
        log.info(
            "traffic_account_resumed",
            account=account,
            skipped_minutes=missed,
            reason="read by the replica that served the account meanwhile",
        )

    async def _work(self, step: Callable[..., T], *args: object) -> T:
        """Run ``step(*args)`` on the worker thread (after the steps queued before it)."""
        return await asyncio.get_running_loop().run_in_executor(self._worker, step, *args)

    # -- one cycle ---------------------------------------------------------------------------
    async def poll(self, account: str) -> None:
        async with self._state(account).lock:
            now = self._now()
            self._drop_released(now)
            led = self.ledger(account)
            if led.released_at:
                self._resume(account, led, now)
            cycle = Cycle()
            try:
                await self._first_reads(account, led, now, cycle)
                await self._settle_due(account, led, now, cycle)
                if self._auditor is not None and not cycle.postponed:
                    await self._auditor.step(account, long_windows=not led.long_refused)
            except BaseException as failure:
                # What was counted before the failure is still published, and what is owed
                # still said (a poll failing for an hour leaves its minutes past their ages);
                # a failure to do so is logged and never replaces the poll's own error.
                try:
                    self._report_owed(account, led, now)
                    await self._publish(account, led, now, ok=False)
                except Exception as exc:
                    log.error(
                        "traffic_publish_failed",
                        account=account,
                        error=f"{type(exc).__name__}: {exc}",
                        poll_error=type(failure).__name__,
                    )
                raise
            refused = cycle.refused is not None and not cycle.read
            self._report_owed(account, led, now)
            await self._publish(account, led, now, ok=not refused)
            if cycle.postponed:  # resumed next poll; nothing owed is dropped
                self._metrics.polls_postponed.labels("traffic").inc()
            if refused and cycle.refused is not None:
                # The platform refuses every read: the poll fails (cdnvideo_up 0), while the
                # reads stay owed and no settle run counts a failure.
                raise UpstreamError(
                    "traffic", "http", f"rate limited: {cycle.refused.message}", 429
                )

    async def _publish(self, account: str, led: AccountLedger, now: float, ok: bool) -> None:
        """Build the account's fragment, save the state, publish (unless held back), set lag."""
        fresh = ok or led.dirty or self._state(account).stale  # a reload's view shown
        fragment = await self._work(self._build, account, led, now)
        if led.dirty:
            led.dirty = False
            self._unsaved = True
        # Saved first: a value Prometheus scraped is always on disk, so a restart
        # never publishes a counter lower than before. Unsaved counters wait.
        saved = True
        if self._unsaved and self._settings.state_file:
            saved = await self._save()
        # Without any snapshot on disk a restart starts afresh (a clean counter
        # reset), so there is nothing to protect by holding counters back.
        if fresh and (saved or not self._on_disk):
            key = StoreKey("traffic", account)
            self._store.publish(key, fragment, max_age=FRAGMENT_MAX_AGE_SECONDS)
            self._zeros_published(led)
        elif led.unpublished or led.unpublished_late:
            # Held back: the keys it put at 0 have not appeared; the fragment published
            # next shows them at 0 first, then only what follows.
            led.drop_unpublished()
            self._state(account).stale = True
        if led.cursor is not None:
            age = self.platform_time(now) - (led.cursor + MINUTE)
            self._metrics.traffic_lag.labels(account).set(age)

    def _report_owed(self, account: str, led: AccountLedger, now: float) -> None:
        """The settle reads due and not yet done: how many minutes, and how long overdue."""
        minutes, overdue = led.owed_minutes(self._ready_time(now), self._settings.settle_stages)
        self._metrics.traffic_windows_owed.labels(account).set(minutes)
        self._metrics.traffic_settle_overdue.labels(account).set(overdue)

    def _can(self, account: str, count: int, leave: int = 0) -> bool:
        """Whether the budget affords ``count`` requests now (nothing else happens); with
        ``leave``, and that many more after them within the same minute."""
        if self._budget is None:
            return True
        if leave:
            limit = self._budget.limit(account)
            if limit is not None and count + leave > limit:
                return False
        return self._budget.affords(account, "traffic", count + leave)

    def _affords(self, account: str, count: int, cycle: Cycle) -> bool:
        """Whether the budget affords ``count`` requests now; if not, the cycle waits."""
        if self._can(account, count):
            return True
        self._wait_budget(account, cycle)
        return False

    def _wait_budget(self, account: str, cycle: Cycle) -> None:
        paused = self._budget is not None and self._budget.paused(account)
        cycle.wait(
            UpstreamError("traffic", "budget", "backing off after a rate limit") if paused else None
        )

    def _halves(self) -> tuple[str, ...]:
        return HALVES if self._settings.per_resource else HALVES[:1]

    async def _first_reads(
        self, account: str, led: AccountLedger, now: float, cycle: Cycle, replans: int = 2
    ) -> None:
        """Read the ready minutes oldest first. A settle read that fell due before the oldest
        of them goes first while the budget affords it and the first reads of every minute
        ready now too (what is owed longest first); else the first reads go first and the
        settle read gets what the budget leaves (a budget below the cost never starves first
        reads, and first reads behind catch up). A read the
        budget cannot afford, or that meets a rate limit, waits for the next poll."""
        s = self._settings
        # After a failed 1-minute read (an outage) the next read is one minute: a probe. So
        # are first reads until the platform's clock is confirmed (``_probing``): the oldest
        # minute owed first, the likeliest to be closed whatever our clock says.
        probing = self._probing()
        longest = 1 if led.outage or probing else self._longest(led, now)
        ready = self._ready_time(now)  # closed on the platform's clock as confirmed
        plan = plan_reads(led.cursor, ready, s.delay_seconds, s.catch_up_minutes, longest)
        if plan.missed and led.cursor is not None:
            log.warning(
                "traffic_minutes_missed",
                account=account,
                minutes=plan.missed,
                after=str(Window(led.cursor, led.cursor + MINUTE)),
                catch_up_minutes=s.catch_up_minutes,
            )
            led.cursor += plan.missed * MINUTE
            led.dirty = True
            self._metrics.traffic_windows.labels(account, "missed").inc(plan.missed)
        outcome = "backfilled" if plan.backfill else "read"
        queue = list(plan.windows)
        cap_before = (led.slow_cap, led.slow_until)
        while queue:
            w = queue[0]
            if not cycle.settled and s.settle_stages:
                # Read on the loop, not the worker: no other step of this account runs now,
                # and a hop here would let other areas' polls take the budget first.
                run = cycle.run or led.due(ready, s.settle_stages, cycle.aside)
                if run is not None and run.due_at(s.settle_stages) <= self._ready_at(w):
                    # leaving room for every first read ready now: a backlog is read first
                    leave = len(self._halves()) * len(queue)
                    await self._settle(account, led, now, cycle, run, leave)
                    if cycle.postponed:
                        return
            if not self._affords(account, len(self._halves()), cycle):
                return
            queue.pop(0)
            last = queue[-1] if queue else w
            doubts = self._doubts
            try:
                fetched = await self._fetch(account, (w,))
            except UpstreamError as exc:
                if postponement(exc):
                    cycle.wait(exc)
                    return
                if isinstance(exc, WindowMismatch):
                    self._metrics.traffic_windows.labels(account, "mismatched").inc(w.minutes)
                if self._refusal(exc) and w.minutes > 1:
                    self._refuse_long(account, led, w, exc)
                    queue = list(chunks(w.start, last.last_minute, 1))
                    continue
                if _slow(exc) and w.minutes > 1:  # try half the window at once, down to 1
                    self._shrink(account, led, w, exc, now)
                    queue = list(chunks(w.start, last.last_minute, led.slow_cap))
                    continue
                if w.minutes == 1:
                    # Even one minute failed: the size was not the problem.
                    led.slow_cap, led.slow_until = cap_before
                    led.outage = True
                raise
            led.answered_at = now
            if self._ready_time(now) != ready or self._doubts != doubts:
                # The replies moved the platform's clock (or say it is off and are not yet
                # confirmed): this window was chosen on the wrong clock, and may hold minutes
                # not closed on the platform's. Plan again; never counted as it is.
                if replans:
                    await self._first_reads(account, led, now, cycle, replans - 1)
                return
            if led.outage or (probing and not self._probing()):
                # the probe was answered (the clock confirmed): the rest in full-size windows
                led.outage = probing = False
                if queue:
                    queue = list(chunks(queue[0].start, last.last_minute, self._longest(led, now)))
            await self._work(self._count, account, led, w, fetched, now)
            cycle.read = True
            self._metrics.traffic_windows.labels(account, outcome).inc(w.minutes)
            log.debug("traffic_window_read", account=account, window=str(w), outcome=outcome)

    def _ready_at(self, w: Window) -> float:
        """When the oldest minute of ``w`` became ready (on the clock ``_ready_time`` gives)."""
        return w.start + MINUTE + self._settings.delay_seconds

    def _count(
        self, account: str, led: AccountLedger, w: Window, fetched: Fetched, now: float
    ) -> None:
        totals, rows = fetched
        sel = self._select.select(rows.values())
        stages = self._settings.settle_stages
        settle = None
        if stages:
            settle = (
                stages[0] * MINUTE,
                self._cap(settle_cap_minutes(stages[0], not led.long_refused)),
            )
        # Read at, and settled after, on the clock that decides what is ready: a settle read
        # never comes before its age on the platform's clock, whichever way ours steps.
        led.count_first_read(w, totals, rows.values(), sel.named_ids, self._ready_time(now), settle)
        if self.final_minutes is not None and not stages:  # no settle reads: final at once
            folded = frozenset(r.id for r in sel.folded)
            resources = {r.id: r.row.counts for r in rows.values()}
            run = Run(w.start, w.end, now, totals.counts, resources, folded)
            tell(self.final_minutes, account, run)
        st = self._state(account)
        st.latest = Latest(w, totals, sel.named, fold(sel.folded) if sel.folded else None)
        folded = frozenset(r.id for r in sel.folded)
        newly = folded - st.folded
        if newly:
            self._metrics.series_dropped.inc(len(newly))
        st.folded = folded

    def _due(
        self, account: str, led: AccountLedger, now: float, aside: Sequence[Run] = ()
    ) -> Run | None:
        """The unsettled run to re-read now, if any (not one ``aside``), after giving up the
        hopeless ones."""
        stages = self._settings.settle_stages
        if not stages:
            if led.pending:  # settling was switched off since the state was saved
                led.pending.clear()
                led.dirty = True
            return None
        led.reschedule(stages)  # the schedule changed since a half was read
        # A day past due while the platform failed it (or answered nothing of the account
        # since it fell due: an outage). A run only postponed (budget, rate limit) waits on.
        late = max(self._settings.catch_up_minutes, GIVE_UP_MINUTES_AT_LEAST) * MINUTE
        for stale in [
            r
            for r in led.pending
            if now > r.due_at(stages) + late and (r.failed_at or led.answered_at < r.due_at(stages))
        ]:
            self._give_up(account, led, stale, "no settle read for a day")
        return led.due(now, stages, aside)

    def _give_up(self, account: str, led: AccountLedger, run: Run, why: str) -> None:
        log.warning("traffic_settle_given_up", account=account, window=str(run.window), why=why)
        self._metrics.traffic_windows.labels(account, "given_up").inc(run.minutes)
        led.drop(run)

    async def _settle_due(self, account: str, led: AccountLedger, now: float, cycle: Cycle) -> None:
        """Settle every run due now, most overdue first, while the budget and the platform's
        rate limit afford it: a backlog (after an outage, or runs falling due together) is
        read in one poll, as the first reads behind are, and holds back no run due after it.
        Each complete read moves a run on an age (or drops it), so the loop ends."""
        for _ in range(len(led.pending) * len(self._settings.settle_stages) + 1):
            if cycle.postponed or (cycle.settled and not cycle.complete):
                return  # waits for the budget or the rate limit, or a clock in doubt
            if cycle.settled:  # the last run's read is complete: the next run due
                cycle.run, cycle.settled, cycle.complete = None, False, False
            await self._settle(account, led, now, cycle)
            if not cycle.settled:  # nothing due
                return

    async def _settle(
        self,
        account: str,
        led: AccountLedger,
        now: float,
        cycle: Cycle,
        run: Run | None = None,
        leave: int = 0,
    ) -> None:
        """Re-read what ``run`` (else the run this poll began with, else the most overdue
        run) owes at its next age: the halves (totals first) and, for a run longer than the
        windows the platform answers now, the pieces, as many as the budget affords with
        ``leave`` requests to spare. Pieces and halves read are kept (``Run.pieces``,
        ``Run.done``) and the rest is read at later polls: a read is never thrown away
        because the budget or a rate limit stopped it part-way. A half the platform failed
        backs the run off (``_settle_failed``). With ``leave``, a read the budget cannot
        afford is left for later in the poll (the first reads go first), not postponed."""
        # On the worker: the runs past a day are given up first.
        ready = self._ready_time(now)
        picked = await self._work(self._due, account, led, ready, cycle.aside)
        if cycle.run is not None:
            run = cycle.run
        run = picked if run is None or run not in led.pending else run
        if run is None:
            return
        cycle.run = run
        stages = self._settings.settle_stages
        per_resource = self._settings.per_resource
        while True:
            longest = self._longest(led, now)
            w, halves = run.next_read(per_resource, longest)
            while halves and not self._can(account, len(halves), leave):
                halves = halves[:-1]  # the halves the budget affords, totals first
            if not halves:
                if not leave:
                    cycle.settled = True
                    self._wait_budget(account, cycle)
                return
            known = requests(run.totals) if w == run.window else 0.0
            doubts = self._doubts
            got, error = await self._fetch_halves(account, (w,), halves, known)
            if got and (self._doubts != doubts or self._ready_time(now) != ready):
                # read on a clock its replies doubt: maybe before its age; stays owed and is
                # read again next poll, while the other runs due are read in this one
                if error is None:
                    cycle.aside.append(run)
                    cycle.settled = cycle.complete = True
                    return
                got = {}
            if got:
                led.answered_at = now
                cycle.read = True
                increased, complete = await self._work(
                    self._settle_step,
                    account,
                    led,
                    run,
                    w,
                    got.get("totals"),
                    got.get("resources"),
                    stages,
                    self._cap(longest),
                )
                if increased:
                    self._metrics.traffic_windows.labels(account, "revised").inc(run.minutes)
                    log.debug("traffic_window_revised", account=account, window=str(run.window))
                if complete and _final(run, led, stages) and self._auditor is not None:
                    self._auditor.settled(account, run.window, run.totals)  # its counts are final
                if complete and error is None:
                    cycle.settled = cycle.complete = True
                    return
            if error is not None:
                break
        cycle.settled = True
        if postponement(error):
            cycle.wait(error)
            return
        if isinstance(error, WindowMismatch):
            self._metrics.traffic_windows.labels(account, "mismatched").inc(error.window.minutes)
        if self._refusal(error) and w.minutes > 1 and not led.long_refused:
            self._refuse_long(account, led, w, error)
            return  # re-read minute by minute next cycle
        if _slow(error) and w.minutes > 1:
            self._shrink(account, led, w, error, now)
        self._settle_failed(account, led, run, now, error)
        raise error

    def _cap(self, minutes: int) -> int:
        """The longest run to keep: one minute while an output wants each minute's figures."""
        return 1 if self.final_minutes is not None else minutes

    def _settle_step(
        self,
        account: str,
        led: AccountLedger,
        run: Run,
        w: Window,
        totals: Row | None,
        rows: dict[str, ResourceRow] | None,
        stages: tuple[int, ...],
        cap: int,
    ) -> tuple[bool, bool]:
        """``led.settle_piece`` (on the worker); a run it drops after its last age is final."""
        folds, per_resource = self._select.folds, self._settings.per_resource
        out = led.settle_piece(run, w, totals, rows, folds, stages, cap, per_resource)
        if self.final_minutes is not None and _final(run, led, stages):
            tell(self.final_minutes, account, run)
        return out

    def _settle_failed(
        self, account: str, led: AccountLedger, run: Run, now: float, exc: UpstreamError
    ) -> None:
        """Back off this run (the runs behind it go first). Give it up once the platform has
        failed its settle reads for SETTLE_GIVE_UP_SECONDS, at least SETTLE_ATTEMPTS times,
        while it answered other reads of the account (an outage does not count)."""
        if led.answered_at > run.failed_at:
            run.failures += 1
            if not run.failing_since:
                run.failing_since = now
        run.failed_at = now
        backoff = min(SETTLE_BACKOFF_MAX_SECONDS, MINUTE * 2.0**run.failures)
        run.retry_at = self._ready_time(now) + backoff  # the clock ``due`` is asked on
        led.dirty = True
        if run.failures >= SETTLE_ATTEMPTS and now - run.failing_since >= SETTLE_GIVE_UP_SECONDS:
            hours = (now - run.failing_since) / 3600
            why = f"settle read failed {run.failures} times over {hours:.1f} h: {exc}"
            self._give_up(account, led, run, why)

    def _longest(self, led: AccountLedger, now: float) -> int:
        """The longest window to ask for now, in minutes."""
        if led.long_refused:
            return 1
        if led.slow_cap and now < led.slow_until:
            return led.slow_cap
        return MAX_WINDOW_MINUTES

    def _shrink(
        self, account: str, led: AccountLedger, w: Window, exc: UpstreamError, now: float
    ) -> None:
        """A window timed out: ask for half as many minutes for the next SLOW_HOLD_SECONDS."""
        led.slow_cap = max(1, w.minutes // 2)
        led.slow_until = now + SLOW_HOLD_SECONDS
        log.warning(
            "traffic_window_halved",
            account=account,
            window=str(w),
            error=exc.message,
            longest_minutes=led.slow_cap,
        )

    @staticmethod
    def _refusal(exc: UpstreamError) -> bool:
        """A long window refused: HTTP 422 (or a 420 not about a rate limit), or HTTP 200
        covering less than was asked."""
        return exc.invalid_parameters or isinstance(exc, WindowMismatch)

    def _refuse_long(self, account: str, led: AccountLedger, w: Window, exc: UpstreamError) -> None:
        led.long_refused = True
        led.dirty = True
        log.warning(
            "traffic_long_windows_refused",
            account=account,
            window=str(w),
            error=exc.message,
            fallback="1-minute windows",
        )

    # -- upstream ----------------------------------------------------------------------------
    async def _fetch(self, account: str, windows: Sequence[Window]) -> Fetched:
        """Totals (and per-resource rows) summed over ``windows``; both halves or nothing."""
        got, error = await self._fetch_halves(account, windows, self._halves())
        if error is not None:
            raise error
        return got["totals"], got.get("resources", {})

    async def _fetch_halves(
        self,
        account: str,
        windows: Sequence[Window],
        halves: Sequence[str],
        known_requests: float = 0.0,
    ) -> tuple[dict[str, Any], UpstreamError | None]:
        """The halves (``totals``: a Row, ``resources``: rows by id) of ``windows`` that were
        answered in full, and the first error of the others (a refusal before the rest).
        An empty per-resource answer fails its half when the totals (read now, or else
        ``known_requests`` counted before) are not zero."""
        calls = []
        asked: list[tuple[str, Window]] = []
        for w in windows:
            for half in halves:
                calls.append(self._client.traffic(account, w.start, w.end, half == "resources"))
                asked.append((half, w))
        replies = await asyncio.gather(*calls, return_exceptions=True)
        errors: list[BaseException] = []
        good: dict[str, list[MetricsReply]] = {h: [] for h in halves}
        failed: set[str] = set()
        for reply, (half, w) in zip(replies, asked, strict=True):
            problem: BaseException | None = None
            if isinstance(reply, MetricsReply):
                try:
                    check_echo(reply, account, w)
                except WindowMismatch as mismatch:
                    problem = mismatch
                else:
                    good[half].append(stating(reply, w))
            else:
                problem = reply
            if problem is not None:
                errors.append(problem)
                failed.add(half)
        for exc in errors:
            if not isinstance(exc, UpstreamError):
                raise exc  # a bug or a cancellation, not the platform
        answered = [r for h in halves if h not in failed for r in good[h]]
        for r in answered:
            if r.skew_seconds is not None:
                self._observe_skew(r.skew_seconds)
            else:
                self._undated = True  # no Date to confirm a clock with: ours is followed
        got: dict[str, Any] = {}
        if len(failed) < len(halves):
            keep = {h: good[h] for h in halves if h not in failed}
            got = await self._work(self._parse, account, keep)
        if "resources" in got and not any(r.rows for r in good["resources"]):
            counted = requests(got["totals"].counts) if "totals" in got else known_requests
            if counted > 0:  # no resources for a window with traffic: no answer, retried
                del got["resources"]
                errors.append(
                    UpstreamError(
                        "traffic",
                        "invalid_body",
                        f"per-resource reply without resources for {windows[0]} while the "
                        f"totals count {counted:.0f} edge requests",
                        200,
                    )
                )
        error: UpstreamError | None = None
        if errors:
            upstream = [e for e in errors if isinstance(e, UpstreamError)]
            refused = [e for e in upstream if self._refusal(e)]
            real = [e for e in upstream if not postponement(e)]
            error = (refused or real or upstream)[0]
        return got, error

    # -- the platform's clock ----------------------------------------------------------------
    def _now(self) -> float:
        """Our wall clock, after checking it against the monotonic clock: a step is logged
        and undone (``_host_time``)."""
        now, mono = self._clock.time(), self._clock.monotonic()
        step = self._host.observe(now, mono)
        if step:
            log.warning(
                "host_clock_stepped",
                step_seconds=round(step, 1),
                action="traffic reads follow the time before the step plus the time elapsed; "
                "the platform's clock readings are measured against that",
            )
        return now

    def _host_time(self, now: float) -> float:
        """``now`` (our wall clock) with its steps undone: the time before each step plus the
        monotonic time elapsed since (the platform's readings correct what that is off)."""
        return now + self._host.correction

    def platform_time(self, now: float) -> float:
        """``now`` on the platform's clock as believed (``PlatformClock``): the lag gauge."""
        return self._host_time(now) + self._platform.believed

    def _ready_time(self, now: float) -> float:
        """The clock that decides which minutes are ready and which settle reads are due: the
        platform's as confirmed, however far from ours either way; until one is confirmed,
        ours or the latest readings' furthest behind it (``PlatformClock.ready_skew``)."""
        return self._host_time(now) + self._platform.ready_skew()

    def _probing(self) -> bool:
        """First reads go one minute at a time: no skew is confirmed yet since the start
        and the latest readings do not all agree with ours (``PlatformClock.trusted``), and
        the replies carry a ``Date`` to confirm one with."""
        return not self._platform.trusted() and not self._undated

    def _observe_skew(self, skew: float) -> None:
        """One reply's reading (the platform's clock minus our wall clock): the gauge shows it;
        the clock moves only when confirmed. Believed against our clock with its steps undone
        (``_host_time``): a step the platform's clock agrees with is no doubt."""
        self._metrics.clock_skew.set(skew)
        before = self._platform.believed
        skew -= self._host.correction
        outcome = self._platform.observe(skew)
        if not self._platform.agrees(skew):
            self._doubts += 1  # a read made meanwhile is not counted (``_first_reads``)
        if outcome == "rejected":
            self._metrics.clock_readings_rejected.inc()
            now = self._clock.time()
            if now >= self._clock_rejected_logged + CLOCK_REJECTED_LOG_SECONDS:
                self._clock_rejected_logged = now
                log.warning(
                    "upstream_clock_reading_rejected",
                    skew_seconds=round(skew, 1),
                    believed_seconds=round(before, 1),
                    action=f"ignored until {SKEW_CONFIRMATIONS} consecutive replies agree",
                )
        elif outcome == "moved" and self._platform.believed:
            believed = self._platform.believed
            log.warning(
                "upstream_clock_skew",
                skew_seconds=round(believed, 1),
                action=(
                    "traffic windows wait for the platform's clock; fix the host's time (NTP)"
                    if believed < 0
                    else "the platform's minutes close before ours; fix the host's time (NTP)"
                ),
            )
        elif outcome == "moved" and before:
            log.info("upstream_clock_skew_gone", skew_seconds=round(skew, 1))

    def _parse(self, account: str, replies: dict[str, list[MetricsReply]]) -> dict[str, Any]:
        """Each half's replies parsed and summed over its windows."""
        rejected: list[str] = []
        out: dict[str, Any] = {}
        if "totals" in replies:
            out["totals"] = merge(parse_totals(r, rejected) for r in replies["totals"])
        if "resources" in replies:
            rows: dict[str, ResourceRow] = {}
            for reply in replies["resources"]:
                for rid, r in self._select.filter(parse_resources(reply, rejected)).items():
                    seen = rows.get(rid)
                    rows[rid] = (
                        r
                        if seen is None
                        else ResourceRow(r.id, r.name, r.cname, merge((seen.row, r.row)))
                    )
            out["resources"] = rows
        if rejected:
            self._report_rejected(account, rejected)
        return out

    def _report_rejected(self, account: str, fields: list[str]) -> None:
        """Count each dropped value; log each field at most once an hour."""
        now = self._clock.time()
        for name in fields:
            self._metrics.values_rejected.labels("traffic", name).inc()
        for name in sorted(set(fields)):
            if now < self._rejected_logged.get(name, -math.inf) + REJECTED_LOG_SECONDS:
                continue
            self._rejected_logged[name] = now
            log.warning(
                "upstream_value_rejected",
                area="traffic",
                account=account,
                field=name,
                values=fields.count(name),
                action="dropped alone; the rest of the window is counted",
            )

    # -- publishing and state ----------------------------------------------------------------
    def _zeros_published(self, led: AccountLedger) -> None:
        """The fragment just put in the store shows the keys ``led`` holds at 0: a scrape
        answered at this sequence or later has seen them at 0."""
        led.published()
        if led.unshown and led.zero_seq < 0:
            led.zero_seq = self._store.sequence

    def _served(self, led: AccountLedger) -> bool:
        """Whether a scrape was answered with every key ``led`` holds at 0 (they show their
        values from the next build on). Also before this process's first scrape: a key new
        in this process is new to Prometheus, which must read its 0 before its count."""
        served = self._store.served
        return 0 <= led.zero_seq <= served

    def _build(self, account: str, led: AccountLedger, now: float) -> Fragment:
        """The account's fragment, rebuilt when its counters changed or a scrape has seen
        the keys it holds at 0 (series not seen for ``series_retention_hours`` are removed
        first)."""
        st = self._state(account)
        served = self._served(led)
        if led.dirty or (led.unshown and served) or st.fragment is None or st.stale:
            oldest = now - self._settings.series_retention_hours * 3600
            gone = led.prune(oldest)
            if gone:
                log.info("traffic_series_removed", account=account, resources=len(gone))
            # built, rendered and compressed here, not in the render thread, against the
            # fragment it replaces (unchanged chunks and label tuples are kept)
            published = self._store.fragment(StoreKey("traffic", account), include_stale=True)
            previous = st.fragment or published
            fragment = build_fragment(account, led, st.latest, self._view, previous, served)
            fragment.packed(previous)
            st.fragment, st.stale = fragment, False
        return st.fragment

    def reselect(self) -> None:
        """Take the store's family selection anew (a config reload changed it); the next
        fragment of each account is built with it (``republish`` builds them now). Counts of
        keys it newly exports start at 0 (``exposure``): on the worker, after the steps queued
        before, so no fragment shows them with what was counted while they were left out.
        The zeroing marks no ledger dirty: ``_rebuild`` refuses a dirty one (counts not yet
        saved), and a state file saved before it lists these keys as not exported, so a
        restart starts them at 0 as well."""
        s = self._settings
        view = View.of(self._store.selection, s.resource_status_codes, s.resource_request_times)
        shown = exposure.newly(exported_keys(self._selected), exported_keys(view))
        self._selected = view  # the view the worker takes next (two reloads in a row)

        def step() -> None:
            for st in list(self._accounts.values()):  # a copy: the loop may add one meanwhile
                exposure.start_at_zero(st.ledger, shown)
                st.stale = True  # the last fragment stays what the rebuild starts from
            self._view = view

        self._worker.submit(step)

    @property
    def state_written(self) -> bool:
        """Whether a state file a restart would load exists (loaded at start or saved since)."""
        return self._on_disk

    @property
    def held_back(self) -> bool:
        """Whether new counters wait for a state save: the last one failed and a snapshot a
        restart would load exists."""
        return self._save_failure_logged != 0.0 and self._on_disk

    async def republish(self) -> int:
        """Rebuild each account's published fragment with the view in force, at once (after
        a reload changed the selection), keeping its publication time; returns how many.

        Left to their next poll: an account whose poll runs now (it builds with the new view
        when it publishes), and counters not yet saved (never published before the state
        file holds them)."""
        done = 0
        for account, st in list(self._accounts.items()):
            key = StoreKey("traffic", account)
            if st.lock.locked() or st.fragment is None or self._store.fragment(key) is None:
                continue
            if self._unsaved and self._settings.state_file:
                continue
            fragment = await self._work(self._rebuild, account, st)
            if fragment is not None and self._store.replace(key, fragment):
                self._zeros_published(st.ledger)
                done += 1
        return done

    def _rebuild(self, account: str, st: AccountState) -> Fragment | None:
        """``st``'s fragment built anew from what it showed (on the worker, after the steps
        queued before it); None when a step since counted something not yet published."""
        led = st.ledger
        if led.dirty or st.fragment is None:
            return None
        fragment = build_fragment(
            account, led, st.latest, self._view, st.fragment, self._served(led)
        )
        fragment.packed(st.fragment)
        st.fragment, st.stale = fragment, False
        return fragment

    def save_state(self) -> None:
        """Write the state file now (also at shutdown), after the steps already queued on the
        worker; a failure is logged, not raised."""
        if self._settings.state_file and self._worker.submit(self._write).result():
            self._unsaved = False

    def _write(self) -> bool:
        """Snapshot every ledger and replace the state file (on the worker thread)."""
        # A copy: the loop may add an account's ledger meanwhile (copying is atomic).
        now = self._clock.time()
        accounts = dict(self._accounts)
        ledgers = {name: st.ledger for name, st in accounts.items()}
        data = state.dump(ledgers, now, exported_keys(self._view))
        try:
            state.write_atomic(self._settings.state_file, data)
        except OSError as exc:
            self._metrics.state_save_failures.inc()
            if now >= self._save_failure_logged + SAVE_FAILURE_LOG_SECONDS:
                self._save_failure_logged = now
                log.error(
                    "traffic_state_save_failed",
                    path=self._settings.state_file,
                    problem=str(exc),
                    effect="new traffic counters are held back until a save succeeds",
                )
            return False
        if self._save_failure_logged:
            self._save_failure_logged = 0.0
            log.info("traffic_state_saved_again", path=self._settings.state_file)
        self._metrics.state_last_save.set(now)
        self._on_disk = True
        return True

    async def _save(self) -> bool:
        self._unsaved = False
        if await self._work(self._write):
            return True
        self._unsaved = True
        return False
