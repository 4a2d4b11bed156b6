"""Reads closed minutes of /app/metrics/v1/ per account, settles late data, publishes counters."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

import structlog

from exporter.config import TrafficSettings
from exporter.exposition import Fragment, Store, StoreKey
from exporter.runtime.selfmetrics import SelfMetrics
from exporter.support.clock import Clock
from exporter.traffic import state
from exporter.traffic.echo import WindowMismatch, check_echo
from exporter.traffic.families import Latest, View, build_fragment
from exporter.traffic.ledger import AccountLedger, Run
from exporter.traffic.parse import ResourceRow, Row, merge, parse_resources, parse_totals
from exporter.traffic.select import ResourceSelector, fold
from exporter.traffic.windows import (
    MAX_WINDOW_MINUTES,
    MINUTE,
    Window,
    chunks,
    last_ready_minute,
    plan_reads,
    settle_cap_minutes,
)
from exporter.upstream.errors import UpstreamError
from exporter.upstream.models import MetricsReply

log = structlog.get_logger("exporter.traffic")

# A traffic fragment not refreshed for this long (the upstream failing) leaves /metrics.
FRAGMENT_MAX_AGE_SECONDS = 600.0
# After a 504 or a timeout the longest window is halved for this long, then tried in full.
SLOW_HOLD_SECONDS = 3600.0
# A run whose settle read failed this often (while other reads were answered) is given up.
SETTLE_ATTEMPTS = 5
SETTLE_BACKOFF_MAX_SECONDS = 900.0
# Beyond this |skew| (the Date header has whole seconds) windows follow the platform's clock.
SKEW_TOLERANCE_SECONDS = 5.0
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


@dataclass
class AccountState:
    """All the poller keeps of one account. The ledger (and which resources it folds) outlives
    a move to another replica for ``series_retention_hours`` so counters continue if the
    account comes back; the rest is dropped when the account leaves (``forget``)."""

    ledger: AccountLedger
    folded: frozenset[str] = frozenset()  # resources folded into __other__ at the last count
    latest: Latest | None = None  # the last window read
    fragment: Fragment | None = None  # the last fragment built
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


class TrafficPoller:
    """Per account: a cursor of accounted minutes, cumulative counters, a ledger of unsettled
    runs; each ``poll`` reads what became ready, re-reads one due run, and publishes
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
        metrics: SelfMetrics,
        clock: Clock,
        settings: TrafficSettings,
    ) -> None:
        self._client = client
        self._store = store
        self._metrics = metrics
        self._clock = clock
        self._settings = settings
        self._view = View.of(
            store.selection, settings.resource_status_codes, settings.resource_request_times
        )
        self._select = ResourceSelector(
            settings.resources_include, settings.resources_exclude, settings.max_resources
        )
        ledgers = state.load(settings.state_file) if settings.state_file else {}
        self._accounts = {name: AccountState(led) for name, led in ledgers.items()}
        self._on_disk = bool(ledgers)  # a snapshot a restart would load exists
        self._unsaved = False
        self._rejected_logged: dict[str, float] = {}
        self._save_failure_logged = 0.0  # when a failed save was last logged (0 = saving works)
        self._skew = 0.0  # the platform's clock minus ours, applied when beyond the tolerance
        self._skewed = False
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="traffic")

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
        continues its counters."""
        now = self._clock.time()
        owned = set(accounts)
        for name in [n for n in self._accounts if n not in owned]:
            self._release(name, now)
        self._drop_released(now)

    def forget(self, account: str) -> None:
        """The account left this replica: release its ledger (kept for
        ``series_retention_hours``, see ``serve``) and drop everything else kept of it."""
        st = self._accounts.get(account)
        if st is not None:
            self._release(account, self._clock.time())

    def _release(self, name: str, now: float) -> None:
        st = self._accounts[name]
        if st.ledger.released_at:
            return
        st.ledger.released_at = now
        self._unsaved = True
        self._accounts[name] = AccountState(st.ledger, st.folded)
        log.info(
            "traffic_account_released",
            account=name,
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
        """An account served again after another replica had it: the minutes in between were
        that replica's to count; read on from the newest ready minute, counters continued."""
        led.released_at = 0.0
        led.dirty = True
        last = last_ready_minute(self.platform_time(now), self._settings.delay_seconds)
        if led.cursor is None or led.cursor >= last - MINUTE:
            return
        skipped = (last - MINUTE - led.cursor) // MINUTE
        led.cursor = last - MINUTE
        log.info(
            "traffic_account_resumed",
            account=account,
            skipped_minutes=skipped,
            reason="read by the replica that served the account meanwhile",
        )

    async def _work(self, step: Callable[..., T], *args: object) -> T:
        """Run ``step(*args)`` on the worker thread (after the steps queued before it)."""
        return await asyncio.get_running_loop().run_in_executor(self._worker, step, *args)

    # -- one cycle ---------------------------------------------------------------------------
    async def poll(self, account: str) -> None:
        async with self._state(account).lock:
            now = self._clock.time()
            self._drop_released(now)
            led = self.ledger(account)
            if led.released_at:
                self._resume(account, led, now)
            try:
                await self._first_reads(account, led, now)
                await self._settle(account, led, now)
            except BaseException as failure:
                # What was counted before the failure is still published; a failure to do so
                # is logged and never replaces the poll's own error.
                try:
                    await self._publish(account, led, now, ok=False)
                except Exception as exc:
                    log.error(
                        "traffic_publish_failed",
                        account=account,
                        error=f"{type(exc).__name__}: {exc}",
                        poll_error=type(failure).__name__,
                    )
                raise
            await self._publish(account, led, now, ok=True)

    async def _publish(self, account: str, led: AccountLedger, now: float, ok: bool) -> None:
        """Build the account's fragment, save the state, publish (unless held back), set lag."""
        fresh = ok or led.dirty
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
        if led.cursor is not None:
            age = self.platform_time(now) - (led.cursor + MINUTE)
            self._metrics.traffic_lag.labels(account).set(age)

    async def _first_reads(
        self, account: str, led: AccountLedger, now: float, replan: bool = True
    ) -> None:
        s = self._settings
        # After a failed 1-minute read (an outage) the next read is one minute: a probe.
        longest = 1 if led.outage else self._longest(led, now)
        ready = self.platform_time(now)  # which minutes closed: the platform's clock decides
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
            w = queue.pop(0)
            last = queue[-1] if queue else w
            try:
                fetched = await self._fetch(account, (w,))
            except UpstreamError as exc:
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
            if replan and abs(self.platform_time(now) - ready) > SKEW_TOLERANCE_SECONDS:
                # The reply's Date header moved the platform's clock (first reply, or a clock
                # jump): this window was chosen on the wrong clock. Plan again on the right one.
                await self._first_reads(account, led, now, replan=False)
                return
            if led.outage:  # the probe was answered: the rest in full-size windows again
                led.outage = False
                if queue:
                    queue = list(chunks(queue[0].start, last.last_minute, self._longest(led, now)))
            await self._work(self._count, account, led, w, fetched, now)
            self._metrics.traffic_windows.labels(account, outcome).inc(w.minutes)
            log.debug("traffic_window_read", account=account, window=str(w), outcome=outcome)

    def _count(
        self, account: str, led: AccountLedger, w: Window, fetched: Fetched, now: float
    ) -> None:
        totals, rows = fetched
        sel = self._select.select(rows.values())
        stages = self._settings.settle_stages
        settle = None
        if stages:
            settle = (stages[0] * MINUTE, settle_cap_minutes(stages[0], not led.long_refused))
        led.count_first_read(w, totals, rows.values(), sel.named_ids, now, settle)
        st = self._state(account)
        st.latest = Latest(w, totals, sel.named, fold(sel.folded) if sel.folded else None)
        folded = frozenset(r.id for r in sel.folded)
        newly = folded - st.folded
        if newly:
            self._metrics.series_dropped.inc(len(newly))
        st.folded = folded

    def _due(self, account: str, led: AccountLedger, now: float) -> Run | None:
        """The unsettled run to re-read now, if any, after giving up the hopeless ones."""
        stages = self._settings.settle_stages
        if not stages:
            if led.pending:  # settling was switched off since the state was saved
                led.pending.clear()
                led.dirty = True
            return None
        for done in [r for r in led.pending if r.stage >= len(stages)]:
            led.drop(done)  # the schedule was shortened since the state was saved
        late = max(self._settings.catch_up_minutes, GIVE_UP_MINUTES_AT_LEAST) * MINUTE
        for stale in [r for r in led.pending if now > r.due_at(stages) + late]:
            self._give_up(account, led, stale, "no settle read for a day")
        return led.due(now, stages)

    def _give_up(self, account: str, led: AccountLedger, run: Run, why: str) -> None:
        log.warning("traffic_settle_given_up", account=account, window=str(run.window), why=why)
        self._metrics.traffic_windows.labels(account, "given_up").inc(run.minutes)
        led.drop(run)

    async def _settle(self, account: str, led: AccountLedger, now: float) -> None:
        run = await self._work(self._due, account, led, now)
        if run is None:
            return
        longest = self._longest(led, now)
        if run.minutes > longest:  # remembered before long windows were refused or slow
            windows = chunks(run.start, run.end - MINUTE, longest)
        else:
            windows = (run.window,)
        try:
            totals, rows = await self._fetch(account, windows)
        except UpstreamError as exc:
            if isinstance(exc, WindowMismatch):
                self._metrics.traffic_windows.labels(account, "mismatched").inc(exc.window.minutes)
            if self._refusal(exc) and run.minutes > 1 and not led.long_refused:
                self._refuse_long(account, led, run.window, exc)
                return  # re-read minute by minute next cycle
            if _slow(exc) and windows[0].minutes > 1:
                self._shrink(account, led, windows[0], exc, now)
            self._settle_failed(account, led, run, now, exc)
            raise
        led.answered_at = now
        stages = self._settings.settle_stages
        if await self._work(led.settle, run, totals, rows, self._select.folds, stages, longest):
            self._metrics.traffic_windows.labels(account, "revised").inc(run.minutes)
            log.debug("traffic_window_revised", account=account, window=str(run.window))

    def _settle_failed(
        self, account: str, led: AccountLedger, run: Run, now: float, exc: UpstreamError
    ) -> None:
        """Back off this run (the runs behind it go first); give it up after SETTLE_ATTEMPTS
        failures that were not an outage (the platform answered other reads in between)."""
        if led.answered_at > run.failed_at:
            run.failures += 1
        run.failed_at = now
        run.retry_at = now + min(SETTLE_BACKOFF_MAX_SECONDS, MINUTE * 2.0**run.failures)
        led.dirty = True
        if run.failures >= SETTLE_ATTEMPTS:
            self._give_up(account, led, run, f"settle read failed {run.failures} times: {exc}")

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
        """Totals (and per-resource rows) summed over ``windows``; both endpoints or nothing."""
        calls = []
        asked: list[Window] = []
        for w in windows:
            calls.append(self._client.traffic(account, w.start, w.end, False))
            asked.append(w)
            if self._settings.per_resource:
                calls.append(self._client.traffic(account, w.start, w.end, True))
                asked.append(w)
        replies = await asyncio.gather(*calls, return_exceptions=True)
        errors: list[BaseException] = []
        for reply, w in zip(replies, asked, strict=True):
            if isinstance(reply, MetricsReply):
                try:
                    check_echo(reply, account, w)
                except WindowMismatch as exc:
                    errors.append(exc)
            else:
                errors.append(reply)
        if errors:
            refused = [e for e in errors if isinstance(e, UpstreamError) and self._refusal(e)]
            raise (refused or errors)[0]
        good = [r for r in replies if isinstance(r, MetricsReply)]
        skews = sorted(r.skew_seconds for r in good if r.skew_seconds is not None)
        if skews:
            self._observe_skew(skews[len(skews) // 2])
        return await self._work(self._parse, account, good)

    # -- the platform's clock ----------------------------------------------------------------
    def platform_time(self, now: float) -> float:
        """``now`` on the platform's clock: shifted by the measured skew once it is beyond
        SKEW_TOLERANCE_SECONDS (below that, the Date header's precision is the difference)."""
        return now + self._skew if self._skewed else now

    def _observe_skew(self, skew: float) -> None:
        self._skew = skew
        self._metrics.clock_skew.set(skew)
        # Hysteresis: a skew near the tolerance does not switch clocks back and forth.
        limit = SKEW_TOLERANCE_SECONDS - 2.0 if self._skewed else SKEW_TOLERANCE_SECONDS
        skewed = abs(skew) > limit
        if skewed and not self._skewed:
            log.warning(
                "upstream_clock_skew",
                skew_seconds=round(skew, 1),
                action="traffic windows follow the platform's clock; fix the host's time (NTP)",
            )
        elif self._skewed and not skewed:
            log.info("upstream_clock_skew_gone", skew_seconds=round(skew, 1))
        self._skewed = skewed

    def _parse(self, account: str, good: list[MetricsReply]) -> Fetched:
        step = 2 if self._settings.per_resource else 1
        rejected: list[str] = []
        totals = merge(parse_totals(r, rejected) for r in good[::step])
        rows: dict[str, ResourceRow] = {}
        for reply in good[1::step] if step == 2 else ():
            for rid, r in self._select.filter(parse_resources(reply, rejected)).items():
                seen = rows.get(rid)
                rows[rid] = (
                    r
                    if seen is None
                    else ResourceRow(r.id, r.name, r.cname, merge((seen.row, r.row)))
                )
        if rejected:
            self._report_rejected(account, rejected)
        return totals, rows

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
    def _build(self, account: str, led: AccountLedger, now: float) -> Fragment:
        """The account's fragment, rebuilt when its counters changed (series not seen for
        ``series_retention_hours`` are removed first)."""
        st = self._state(account)
        if led.dirty or led.unshown or st.fragment is None:
            oldest = now - self._settings.series_retention_hours * 3600
            gone = led.prune(oldest)
            if gone:
                log.info("traffic_series_removed", account=account, resources=len(gone))
            fragment = build_fragment(account, led, st.latest, self._view)
            # rendered and compressed here, not in the render thread, against the fragment it
            # replaces (unchanged chunks and label tuples are kept)
            published = self._store.fragment(StoreKey("traffic", account), include_stale=True)
            fragment.packed(st.fragment or published)
            st.fragment = fragment
        return st.fragment

    def reselect(self) -> None:
        """Take the store's family selection anew (a config reload changed it); the next
        fragment of each account is built with it."""
        s = self._settings
        self._view = View.of(
            self._store.selection, s.resource_status_codes, s.resource_request_times
        )

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
        data = state.dump({name: st.ledger for name, st in accounts.items()}, now)
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
