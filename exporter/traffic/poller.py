"""Reads closed minutes of /app/metrics/v1/ per account, settles late data, publishes counters."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from typing import TypeVar

import structlog
from structlog.contextvars import bound_contextvars

from exporter.areakit.metrics import AreaMetrics
from exporter.exposition import Store
from exporter.support import offloop
from exporter.support.clock import Clock
from exporter.traffic import policy
from exporter.traffic.accounts import MOVED, Accounts, AccountState, Release
from exporter.traffic.auditor import Auditor
from exporter.traffic.cycle import Allowance, Budget, Cycle
from exporter.traffic.echo import WindowMismatch
from exporter.traffic.final import FinalMinutes
from exporter.traffic.ledger import AccountLedger
from exporter.traffic.persist import Publisher, StateFile
from exporter.traffic.read import Asked, Reader, Replies, final, postponement
from exporter.traffic.reply import TrafficSource
from exporter.traffic.runs import HALVES, Run
from exporter.traffic.select import ResourceSelector
from exporter.traffic.settings import TrafficSettings
from exporter.traffic.skew import Clocks
from exporter.traffic.steps import on_worker, untied_task
from exporter.traffic.windows import MINUTE, Window, chunks, plan_reads
from exporter.upstream.errors import UpstreamError

log = structlog.get_logger("exporter.traffic")

T = TypeVar("T")


class Doubted(Exception):
    """A first read's replies moved the platform's clock it was planned on: not counted."""


class TrafficPoller:
    """Per account: a cursor of accounted minutes, cumulative counters, a ledger of unsettled
    runs; each ``poll`` reads what became ready, re-reads the runs due, and publishes
    ``traffic/<account>``. A failed request raises and leaves cursor and counters as they were.

    Fetch, then process: requests run on the event loop and come back as received; one worker
    step reads them (``read.Reader``: decode, check, parse, count or settle) and a second builds
    the fragment and saves the state (``persist.Publisher``), so ``/metrics`` and ``/healthz``
    keep answering during a refresh, and the ledgers are never read and written at the same
    time (the worker does one step at a time).
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
        self._allowance = Allowance(budget)
        self._metrics = metrics
        self._clock = clock
        self._settings = settings
        select = ResourceSelector(
            settings.resources_include, settings.resources_exclude, settings.max_resources
        )
        self.clocks = Clocks(clock, metrics)
        file = StateFile(settings, metrics, clock)
        forget_audit = auditor.forget if auditor is not None else None
        ledgers = file.load()
        self._accounts = Accounts(
            ledgers, clock, settings, file.changed, forget_audit, self._named, file.lost
        )
        self.publisher = Publisher(
            store, metrics, clock, settings, self._accounts, file, self.clocks.platform_time
        )
        self._reader = Reader(
            self._accounts, self.clocks, select, settings, metrics, clock, self._final_minutes
        )
        self._worker = offloop.WORKER  # shared with the other pollers and the renderer
        # Told each run of minutes once it is final (remote write). While set, runs are kept
        # to one minute, so what it is told is the platform's own figure for each minute.
        self.final_minutes: FinalMinutes | None = None
        # account -> when a poll the budget held back should run again (``wake_at``)
        self._wake: dict[str, float] = {}

    def _named(self, account: str, outcome: str, minutes: int) -> None:
        """``minutes`` of ``account`` owed a settle read are left unread, for ``outcome``
        (``Accounts``: released with the account, given up with a state file lost)."""
        self._metrics.traffic_windows.labels(account, outcome).inc(minutes)

    def _final_minutes(self) -> FinalMinutes | None:
        return self.final_minutes

    def ledger(self, account: str) -> AccountLedger:
        """The account's ledger (created empty on first use); for diagnostics and tests."""
        return self._accounts.state(account).ledger

    def _state(self, account: str) -> AccountState:
        return self._accounts.state(account)

    def state(self, account: str) -> AccountState | None:
        """What the poller keeps of ``account`` (None: nothing); for diagnostics and tests."""
        return self._accounts.get(account)

    # -- accounts served (``Accounts``) ----------------------------------------------------------
    def serve(self, accounts: Iterable[str]) -> None:
        """The accounts this replica serves now (``Accounts.serve``)."""
        self._accounts.serve(accounts)

    def held(self) -> tuple[str, ...]:
        """The accounts whose ledgers are held and not released (``Accounts.held``)."""
        return self._accounts.held()

    def forget(self, account: str, reason: Release = MOVED) -> None:
        """The account left this replica (``Accounts.forget``)."""
        self._accounts.forget(account, reason)

    # -- publishing and state (``Publisher``) ----------------------------------------------------
    def reselect(self) -> None:
        """A config reload changed the family selection (``Publisher.reselect``)."""
        self.publisher.reselect()

    async def republish(self) -> int:
        """Rebuild the published fragments with the view in force (``Publisher.republish``)."""
        return await self.publisher.republish()

    def save_state(self) -> None:
        """Write the state file now (``Publisher.save_state``)."""
        self.publisher.save_state()

    @property
    def state_written(self) -> bool:
        """Whether a state file a restart would load exists (loaded at start or saved since)."""
        return self.publisher.file.on_disk

    @property
    def held_back(self) -> bool:
        """Whether new counters wait for a state save: the last one failed and a snapshot a
        restart would load exists."""
        return self.publisher.file.failure_logged != 0.0 and self.publisher.file.on_disk

    def platform_time(self, now: float) -> float:
        """``now`` on the platform's clock as believed (``Clocks.platform_time``)."""
        return self.clocks.platform_time(now)

    # -- one cycle ---------------------------------------------------------------------------
    async def poll(self, account: str) -> None:
        """One cycle of ``account``: its log lines name it (bound once)."""
        async with self._state(account).lock:
            now = self.clocks.now()  # a step's line is the host's, not the account's
            with bound_contextvars(account=account):
                await self._cycle(account, now)

    def wake_at(self, account: str) -> float | None:
        """When the account's next poll should run (wall clock) because the budget held its
        last one back and frees before the next tick; asked once after each poll."""
        return self._wake.pop(account, None)

    async def _cycle(self, account: str, now: float) -> None:
        self._accounts.drop_released(now)
        led = self.ledger(account)
        if led.released_at:
            self._accounts.resume(account, led, self.clocks.ready_time(now))
        cycle = Cycle()
        try:
            await self._first_reads(account, led, now, cycle)
            # First reads waiting for requests the budget gives back leave a settle read what
            # they cannot use; the poll still waits for the first reads.
            waiting, wanted = cycle.first_reads_wait and cycle.refused is None, cycle.wanted
            if waiting:
                cycle.postponed = False
            await self._settle_due(account, led, now, cycle)
            if waiting:
                cycle.postponed, cycle.wanted = True, wanted
            if self._auditor is not None and not cycle.postponed:
                # its requests and lines are the audit's own (they name the account)
                audit = self._auditor.step(account, long_windows=not led.long_refused)
                await untied_task(audit)
        except BaseException as failure:
            # What was counted before the failure is still published, and what is owed
            # still said (a poll failing for an hour leaves its minutes past their ages);
            # a failure to do so is logged and never replaces the poll's own error.
            try:
                self._report_owed(account, led, now)
                await self.publisher.publish(account, led, now, ok=False)
            except Exception as exc:
                log.error(
                    "traffic_publish_failed",
                    error=f"{type(exc).__name__}: {exc}",
                    poll_error=type(failure).__name__,
                )
            raise
        refused = cycle.refused is not None and not cycle.read
        self._report_owed(account, led, now)
        await self.publisher.publish(account, led, now, ok=not refused)
        if cycle.postponed:  # resumed next poll; nothing owed is dropped
            self._metrics.polls_postponed.labels("traffic").inc()
            delay = None if cycle.refused is not None else self._allowance.frees_in(account, cycle)
            if delay is not None:
                self._wake[account] = self._clock.time() + delay
        if refused and cycle.refused is not None:
            # The platform refuses every read: the poll fails (cdnvideo_up 0), while the
            # reads stay owed and no settle run counts a failure.
            raise UpstreamError("traffic", "http", f"rate limited: {cycle.refused.message}", 429)

    def _report_owed(self, account: str, led: AccountLedger, now: float) -> None:
        """The settle reads due and not yet done: how many minutes, and how long overdue."""
        minutes, overdue = led.owed_minutes(
            self.clocks.ready_time(now), policy.stages(self._settings, led)
        )
        self._metrics.traffic_windows_owed.labels(account).set(minutes)
        self._metrics.traffic_settle_overdue.labels(account).set(overdue)

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
        probing = self.clocks.probing()
        longest = 1 if led.outage or probing else policy.longest(led, now)
        ready = self.clocks.ready_time(now)  # closed on the platform's clock as confirmed
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
        outcome = "backfilled" if plan.backfill else "read"
        queue = list(plan.windows)
        cap_before = (led.slow_cap, led.slow_until)
        while queue:
            w = queue[0]
            if not cycle.settled and led.pending:
                # Read on the loop, not the worker: no other step of this account runs now,
                # and a hop here would let other areas' polls take the budget first.
                ages = policy.stages(s, led)
                run = cycle.run or led.due(ready, ages, cycle.aside)
                if run is not None and run.due_at(ages) <= self._ready_at(w):
                    # leaving room for every first read ready now: a backlog is read first
                    leave = len(self._halves()) * len(queue)
                    await self._settle(account, led, now, cycle, run, leave)
                    if cycle.postponed:
                        return
            if not self._allowance.affords(account, len(self._halves()), cycle):
                cycle.first_reads_wait = True
                return
            queue.pop(0)
            last = queue[-1] if queue else w
            doubts = self.clocks.doubts
            try:
                await self._fetch(account, led, w, now, ready, doubts)
            except Doubted:
                # The replies moved the platform's clock (or say it is off and are not yet
                # confirmed): this window was chosen on the wrong clock, and may hold minutes
                # not closed on the platform's. Plan again; never counted as it is.
                if replans:
                    await self._first_reads(account, led, now, cycle, replans - 1)
                return
            except UpstreamError as exc:
                if postponement(exc):
                    cycle.wait(exc)
                    return
                if isinstance(exc, WindowMismatch):
                    self._metrics.traffic_windows.labels(account, "mismatched").inc(w.minutes)
                if policy.refusal(exc) and w.minutes > 1:
                    policy.refuse_long(led, w, exc)
                    queue = list(chunks(w.start, last.last_minute, 1))
                    continue
                if policy.slow(exc) and w.minutes > 1:  # try half the window at once, down to 1
                    policy.shrink(led, w, exc, now)
                    queue = list(chunks(w.start, last.last_minute, led.slow_cap))
                    continue
                if w.minutes == 1:
                    # Even one minute failed: the size was not the problem.
                    led.slow_cap, led.slow_until = cap_before
                    led.outage = True
                raise
            replan = False
            if led.outage or (probing and not self.clocks.probing()):
                # the probe was answered (the clock confirmed): the rest in full-size windows
                replan = probing and lifted
                led.outage = probing = False
                if queue:
                    queue = list(chunks(queue[0].start, last.last_minute, policy.longest(led, now)))
            cycle.read = True
            self._metrics.traffic_windows.labels(account, outcome).inc(w.minutes)
            log.debug("traffic_window_read", window=str(w), outcome=outcome)
            if replan:  # catch-up was lifted for the probe: planned again on the confirmed clock
                await self._first_reads(account, led, now, cycle, replans)
                return

    def _ready_at(self, w: Window) -> float:
        """When the oldest minute of ``w`` became ready (on the clock ``_ready_time`` gives)."""
        return w.start + MINUTE + self._settings.delay_seconds

    async def _settle_due(self, account: str, led: AccountLedger, now: float, cycle: Cycle) -> None:
        """Settle every run due now, most overdue first, while the budget and the platform's
        rate limit afford it: a backlog (after an outage, or runs falling due together) is
        read in one poll, as the first reads behind are, and holds back no run due after it.
        Each complete read moves a run on an age (or drops it), so the loop ends."""
        for _ in range(len(led.pending) * len(policy.stages(self._settings, led)) + 1):
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
        ready = self.clocks.ready_time(now)
        picked = await on_worker(
            policy.due, self._metrics, account, led, ready, self._settings, cycle.aside
        )
        if cycle.run is not None:
            run = cycle.run
        run = picked if run is None or run not in led.pending else run
        if run is None:
            return
        cycle.run = run
        stages = policy.stages(self._settings, led)
        per_resource = self._settings.per_resource
        while True:
            longest = policy.longest(led, now)
            w, halves = run.next_read(per_resource, longest)
            while halves and not self._allowance.can(account, len(halves), leave):
                halves = halves[:-1]  # the halves the budget affords, totals first
            if not halves:
                if not leave:
                    cycle.settled = True
                    self._allowance.wait(account, cycle)
                return
            doubts = self.clocks.doubts
            replies, asked = await self._send(account, w, halves)
            read = await on_worker(
                self._reader.settle,
                account,
                led,
                run,
                w,
                replies,
                asked,
                halves,
                now,
                ready,
                doubts,
                self._run_cap(longest),
            )
            error = read.error
            if read.doubted and error is None:
                # read on a clock its replies doubt: maybe before its age; stays owed and is
                # read again next poll, while the other runs due are read in this one
                cycle.aside.append(run)
                cycle.settled = cycle.complete = True
                return
            if read.read:
                cycle.read = True
                complete = read.complete
                if read.increased:
                    self._metrics.traffic_windows.labels(account, "revised").inc(run.minutes)
                    log.debug("traffic_window_revised", window=str(run.window))
                if complete and final(run, led, stages) and self._auditor is not None:
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
        if policy.refusal(error) and w.minutes > 1 and not led.long_refused:
            policy.refuse_long(led, w, error)
            return  # re-read minute by minute next cycle
        if policy.slow(error) and w.minutes > 1:
            policy.shrink(led, w, error, now)
        policy.settle_failed(
            self._metrics, account, led, run, now, self.clocks.ready_time(now), error
        )
        raise error

    def _run_cap(self, minutes: int) -> int:
        """The longest run to keep (``policy.cap``)."""
        return policy.cap(minutes, self.final_minutes is not None)

    # -- upstream: the loop sends, one worker step reads (``Reader``) ----------------------------
    async def _fetch(
        self, account: str, led: AccountLedger, w: Window, now: float, ready: float, doubts: int
    ) -> None:
        """A first read of ``w``: both halves counted, or nothing (raises the first error;
        ``Doubted``: the replies moved the clock it was planned on)."""
        halves = self._halves()
        replies, asked = await self._send(account, w, halves)
        read = await on_worker(
            self._reader.first, account, led, w, replies, asked, halves, now, ready, doubts
        )
        if read.error is not None:
            raise read.error
        if read.doubted:
            raise Doubted

    async def _send(self, account: str, w: Window, halves: Sequence[str]) -> tuple[Replies, Asked]:
        """The requests of ``halves`` of ``w`` at once; what each got, as received (the body
        still bytes when large): read by one worker step, which takes the replies over."""
        asked: Asked = [(half, w) for half in halves]
        calls = [
            untied_task(self._client.traffic(account, w.start, w.end, half == "resources"))
            for half, _ in asked
        ]  # the client's lines name no account
        got = await asyncio.gather(*calls, return_exceptions=True)
        del calls  # the tasks hold their replies too: the step is to be their only holder
        replies: Replies = []
        for reply in got:
            if isinstance(reply, BaseException) and not isinstance(reply, UpstreamError):
                raise reply  # a bug or a cancellation, not the platform
            replies.append(reply)
        del got
        return replies, asked
