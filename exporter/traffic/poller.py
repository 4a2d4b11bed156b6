"""Reads closed minutes of /app/metrics/v1/ per account, settles late data, publishes counters."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol, TypeVar

import structlog

from exporter.clock import Clock
from exporter.config import TrafficSettings
from exporter.exposition import Fragment, Store
from exporter.selfmetrics import SelfMetrics
from exporter.traffic import state
from exporter.traffic.families import Latest, build_fragment
from exporter.traffic.ledger import OTHER, AccountLedger, Run
from exporter.traffic.parse import ResourceRow, Row, merge, parse_resources, parse_totals
from exporter.traffic.select import ResourceSelector, fold
from exporter.traffic.windows import (
    MAX_WINDOW_MINUTES,
    MINUTE,
    Window,
    chunks,
    plan_reads,
    settle_cap_minutes,
)
from exporter.upstream.errors import UpstreamError
from exporter.upstream.models import MetricsReply

log = structlog.get_logger("exporter.traffic")

# A traffic fragment not refreshed for this long (the upstream failing) leaves /metrics.
FRAGMENT_MAX_AGE_SECONDS = 600.0
# Unsettled runs this long past due (settle reads failing) are given up (their late data lost).
GIVE_UP_MINUTES_AT_LEAST = 1440

Fetched = tuple[Row, dict[str, ResourceRow]]
T = TypeVar("T")


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
        self._select = ResourceSelector(
            settings.resources_include, settings.resources_exclude, settings.max_resources
        )
        self._ledgers = state.load(settings.state_file) if settings.state_file else {}
        self._latest: dict[str, Latest] = {}
        self._folded: dict[str, frozenset[str]] = {}
        self._fragments: dict[str, Fragment] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._unsaved = False
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="traffic")

    def ledger(self, account: str) -> AccountLedger:
        """The account's ledger (created empty on first use); for diagnostics and tests."""
        led = self._ledgers.get(account)
        if led is None:
            led = self._ledgers[account] = AccountLedger()
        return led

    async def _work(self, step: Callable[..., T], *args: object) -> T:
        """Run ``step(*args)`` on the worker thread (after the steps queued before it)."""
        return await asyncio.get_running_loop().run_in_executor(self._worker, step, *args)

    # -- one cycle ---------------------------------------------------------------------------
    async def poll(self, account: str) -> None:
        lock = self._locks.setdefault(account, asyncio.Lock())
        async with lock:
            now = self._clock.time()
            led = self.ledger(account)
            ok = False
            try:
                await self._first_reads(account, led, now)
                await self._settle(account, led, now)
                ok = True
            finally:
                fresh = ok or led.dirty
                fragment = await self._work(self._build, account, led)
                if fresh:
                    key = f"traffic/{account}"
                    self._store.publish(key, fragment, max_age=FRAGMENT_MAX_AGE_SECONDS)
                if led.cursor is not None:
                    self._metrics.traffic_lag.labels(account).set(now - (led.cursor + MINUTE))
                if led.dirty:
                    led.dirty = False
                    self._unsaved = True
                if self._unsaved and self._settings.state_file:
                    await self._save()

    async def _first_reads(self, account: str, led: AccountLedger, now: float) -> None:
        s = self._settings
        longest = 1 if led.long_refused else MAX_WINDOW_MINUTES
        plan = plan_reads(led.cursor, now, s.delay_seconds, s.catch_up_minutes, longest)
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
        while queue:
            w = queue.pop(0)
            try:
                fetched = await self._fetch(account, (w,))
            except UpstreamError as exc:
                if exc.invalid_parameters and w.minutes > 1:
                    self._refuse_long(account, led, w, exc)
                    last = queue[-1] if queue else w
                    queue = list(chunks(w.start, last.last_minute, 1))
                    continue
                raise
            await self._work(self._count, account, led, w, fetched, now)
            self._metrics.traffic_windows.labels(account, outcome).inc(w.minutes)
            log.debug("traffic_window_read", account=account, window=str(w), outcome=outcome)

    def _count(
        self, account: str, led: AccountLedger, w: Window, fetched: Fetched, now: float
    ) -> None:
        totals, rows = fetched
        sel = self._select.select(rows.values())
        revisit = self._settings.revisit_minutes
        settle = (revisit * MINUTE, settle_cap_minutes(revisit, not led.long_refused))
        led.count_first_read(
            w, totals, rows.values(), sel.named_ids, now, settle if revisit else None
        )
        self._latest[account] = Latest(
            w, totals, sel.named, fold(sel.folded) if sel.folded else None
        )
        folded = frozenset(r.id for r in sel.folded)
        newly = folded - self._folded.get(account, frozenset())
        if newly:
            self._metrics.series_dropped.inc(len(newly))
        self._folded[account] = folded

    def _due(self, account: str, led: AccountLedger, now: float) -> Run | None:
        """The unsettled run to re-read now, if any, after giving up the hopeless ones."""
        revisit = self._settings.revisit_minutes
        if not revisit:
            if led.pending:  # settling was switched off since the state was saved
                led.pending.clear()
                led.dirty = True
            return None
        give_up = (revisit + max(self._settings.catch_up_minutes, GIVE_UP_MINUTES_AT_LEAST)) * 60
        while led.pending and now > led.pending[0].last_read_at + give_up:
            stale = led.pending[0]
            log.warning("traffic_settle_given_up", account=account, window=str(stale.window))
            led.drop(stale)
        return led.due(now, revisit * MINUTE)

    async def _settle(self, account: str, led: AccountLedger, now: float) -> None:
        run = await self._work(self._due, account, led, now)
        if run is None:
            return
        if run.minutes > 1 and led.long_refused:  # remembered before long windows were refused
            windows = chunks(run.start, run.end - MINUTE, 1)
        else:
            windows = (run.window,)
        try:
            totals, rows = await self._fetch(account, windows)
        except UpstreamError as exc:
            if exc.invalid_parameters and run.minutes > 1 and not led.long_refused:
                self._refuse_long(account, led, run.window, exc)
                return  # re-read minute by minute next cycle
            raise
        if await self._work(led.settle, run, totals, rows, self._select.folds):
            self._metrics.traffic_windows.labels(account, "revised").inc(run.minutes)
            log.debug("traffic_window_revised", account=account, window=str(run.window))

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
        for w in windows:
            calls.append(self._client.traffic(account, w.start, w.end, False))
            if self._settings.per_resource:
                calls.append(self._client.traffic(account, w.start, w.end, True))
        replies = await asyncio.gather(*calls, return_exceptions=True)
        errors = [r for r in replies if isinstance(r, BaseException)]
        if errors:
            refused = [e for e in errors if isinstance(e, UpstreamError) and e.invalid_parameters]
            raise (refused or errors)[0]
        good = [r for r in replies if isinstance(r, MetricsReply)]
        return await self._work(self._parse, good)

    def _parse(self, good: list[MetricsReply]) -> Fetched:
        step = 2 if self._settings.per_resource else 1
        totals = merge(parse_totals(r) for r in good[::step])
        rows: dict[str, ResourceRow] = {}
        for reply in good[1::step] if step == 2 else ():
            for rid, r in self._select.filter(parse_resources(reply)).items():
                seen = rows.get(rid)
                rows[rid] = (
                    r
                    if seen is None
                    else ResourceRow(r.id, r.name, r.cname, merge((seen.row, r.row)))
                )
        return totals, rows

    # -- publishing and state ----------------------------------------------------------------
    def _build(self, account: str, led: AccountLedger) -> Fragment:
        """The account's fragment, rebuilt when its counters changed (series of resources
        that left the selection are removed first)."""
        latest = self._latest.get(account)
        if led.dirty or account not in self._fragments:
            if latest is not None:
                live = {r.id for r in latest.named}
                if latest.other is not None:
                    live.add(OTHER)
                gone = led.prune(live)
                if gone:
                    log.info("traffic_series_removed", account=account, resources=len(gone))
            fragment = build_fragment(account, led, latest)
            fragment.packed()  # rendered and compressed here, not in the render thread
            self._fragments[account] = fragment
        return self._fragments[account]

    def save_state(self) -> None:
        """Write the state file now (also at shutdown), after the steps already queued on the
        worker; a failure is logged, not raised."""
        if self._settings.state_file and self._worker.submit(self._write).result():
            self._unsaved = False

    def _write(self) -> bool:
        """Snapshot every ledger and replace the state file (on the worker thread)."""
        # A copy: the loop may add an account's ledger meanwhile (copying is atomic).
        data = state.dump(dict(self._ledgers), self._clock.time())
        try:
            state.write_atomic(self._settings.state_file, data)
        except OSError as exc:
            log.error("traffic_state_save_failed", path=self._settings.state_file, problem=str(exc))
            return False
        return True

    async def _save(self) -> None:
        self._unsaved = False
        if not await self._work(self._write):
            self._unsaved = True
