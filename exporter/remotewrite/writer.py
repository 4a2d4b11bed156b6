"""The remote writer: takes each run of final minutes from the traffic poller, keeps it until
the receiver acknowledged it, and writes it once, oldest first, at the minute's own timestamp.

``final`` (the traffic poller's hook, on its worker thread) turns the run into one request
body per minute and stores them (``MinuteStore``) before it returns. ``flush`` (the background
loop, or a test) sends what is due: a minute whose body the receiver refuses with a 400 is
split in halves until the bad series are found and the rest is written; those series and
minutes past ``max_age_minutes`` are dropped for good, counted and logged once; anything else
(a receiver that refuses the request itself, 401, 403, 405 or a redirect, as well as a 5xx or
no answer) is retried with the same bytes after a backoff, the minute pending meanwhile (what
the Pending and Stalled alerts read). A minute not yet closed is never sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Awaitable, Callable, Mapping, Sequence

import structlog

from exporter.remotewrite.metrics import RemoteWriteMetrics
from exporter.remotewrite.samples import MINUTE, Figures, FinalRun, minute_series
from exporter.remotewrite.sender import Answer
from exporter.remotewrite.settings import RemoteWriteSettings
from exporter.remotewrite.store import MinuteStore
from exporter.remotewrite.wire import Series, count, decode, encode, halves
from exporter.support.clock import Clock
from exporter.support.offloop import aside

log = structlog.get_logger("exporter.remotewrite")

BACKOFF_FIRST_SECONDS = 5.0
BACKOFF_MAX_SECONDS = 300.0
LOG_AGAIN_SECONDS = 3600.0  # a permanent refusal is logged once an hour per account and reason
IDLE_SECONDS = 15.0  # the loop looks for due minutes at least this often

Post = Callable[[bytes], Awaitable[Answer]]

# A reason's log event and what happens to the minute (any other reason: dropped).
NOTES = {
    "retry": ("retrying", "retried with the same bytes"),
    "refused": (
        "refused",
        "kept pending, retried with the same bytes after a backoff: the receiver refuses the "
        "request itself (check remote_write.url and its credentials)",
    ),
}


class RemoteWriter:
    def __init__(
        self,
        settings: RemoteWriteSettings,
        store: MinuteStore,
        post: Post,
        clock: Clock,
        metrics: RemoteWriteMetrics,
        wants: Callable[[str], bool],
    ) -> None:
        self._s = settings
        self._store = store
        self._post = post
        self._clock = clock
        self._metrics = metrics
        self._wants = wants
        self._failures: dict[str, int] = {}
        self._retry_at: dict[str, float] = {}
        self._logged: dict[tuple[str, str], float] = {}
        self._wake = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        for account in store.accounts():
            self._show(account)

    # -- the traffic poller's hook (worker thread) ------------------------------------------
    def final(
        self,
        account: str,
        start: int,
        end: int,
        totals: Figures,
        resources: Mapping[str, Figures],
    ) -> None:
        """The minutes [start, end) of ``account`` are final with these figures (a longer run
        is spread over its minutes: ``samples``)."""
        run = FinalRun(account, start, end, totals, resources)
        bodies = {m: encode(s) for m, s in minute_series(run, self._wants).items() if s}
        if self._store.offer(account, bodies) and self._loop is not None:
            self._loop.call_soon_threadsafe(self._wake.set)

    # -- sending (event loop) ---------------------------------------------------------------
    async def run(self) -> None:
        """Send what is due whenever a minute is offered, a backoff ends, or every
        IDLE_SECONDS; until cancelled. A bug in one round is logged, not fatal."""
        self._loop = asyncio.get_running_loop()
        while True:
            try:
                await self.flush()
            except Exception as exc:  # the next round tries again; the minutes stay pending
                log.error("remote_write_failed", error=f"{type(exc).__name__}: {exc}")
            self._wake.clear()
            waits = [t - self._clock.time() for t in self._retry_at.values()]
            timeout = max(0.5, min([IDLE_SECONDS, *waits]))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout)

    async def flush(self) -> None:
        """Send every pending minute that is due, per account oldest first; an account whose
        request must be retried waits out its backoff (the others go on)."""
        for account, minutes in self._store.pending().items():
            now = self._clock.time()
            if now < self._retry_at.get(account, -math.inf):
                self._show(account)  # the oldest pending minute ages meanwhile
                continue
            for minute in minutes:
                now = self._clock.time()
                if minute + MINUTE > now:
                    break  # not closed yet on our clock: no sample from the future
                body = await aside(self._store.body, account, minute)
                if body is None:
                    continue  # its file is gone (said by the store)
                if now - minute > self._s.max_age_minutes * MINUTE:
                    await self._drop(account, minute, body, "too_old", "older than max_age_minutes")
                    continue
                if not await self._write(account, minute, body):
                    self._back_off(account)
                    break
                self._failures.pop(account, None)
                self._retry_at.pop(account, None)
            self._show(account)

    async def _write(self, account: str, minute: int, body: bytes) -> bool:
        """Write one minute; False when it must be retried (nothing is dropped then)."""
        answer = await self._post(body)
        if answer.verdict == "written":
            self._count("sent", await aside(count, body))
            await self._done(account, minute)
            return True
        if answer.verdict in ("retry", "refused"):
            self._count("retried", await aside(count, body))
            self._note(account, answer.verdict, answer, minute, warn=answer.verdict == "refused")
            return False
        if answer.verdict == "too_old":
            await self._drop(account, minute, body, "too_old", answer.detail)
            return True
        if not await self._split(account, minute, decode(body)):
            return False
        await self._done(account, minute)
        return True

    async def _done(self, account: str, minute: int) -> None:
        """Out of the pending set, into the written index: saved with fsyncs, so on a worker
        thread (a busy disk would stall the loop serving /metrics)."""
        await aside(self._store.done, account, minute, self._clock.time())

    async def _split(self, account: str, minute: int, series: Sequence[Series]) -> bool:
        """A 400 for these series: write each half on its own, down to the single series the
        receiver refuses. False when a part must be retried (the parts already written are
        written again then: the same samples, stored once)."""
        if len(series) == 1:
            self._count("rejected", 1)
            name = dict(series[0].labels).get("__name__", "")
            self._note(account, "rejected", Answer("bad", 400, name), minute)
            return True
        for half in halves(series):
            answer = await self._post(await aside(encode, half))
            if answer.verdict == "written":
                self._count("sent", len(half))
            elif answer.verdict == "too_old":
                self._count("too_old", len(half))
                self._note(account, "too_old", answer, minute)
            elif answer.verdict in ("retry", "refused"):
                self._count("retried", len(half))
                self._note(account, answer.verdict, answer, minute, warn=answer.verdict != "retry")
                return False
            elif not await self._split(account, minute, half):
                return False
        return True

    async def _drop(self, account: str, minute: int, body: bytes, outcome: str, why: str) -> None:
        self._count(outcome, await aside(count, body))
        self._note(account, outcome, Answer("too_old", 0, why), minute)
        await self._done(account, minute)

    def _back_off(self, account: str) -> None:
        n = self._failures[account] = self._failures.get(account, 0) + 1
        delay = min(BACKOFF_MAX_SECONDS, BACKOFF_FIRST_SECONDS * 2 ** (n - 1))
        self._retry_at[account] = self._clock.time() + delay

    def _count(self, outcome: str, samples: int) -> None:
        self._metrics.remote_write_samples.labels(outcome).inc(samples)

    def _note(self, account: str, why: str, answer: Answer, minute: int, warn: bool = True) -> None:
        """Log a refusal once an hour per account and reason (every one is counted)."""
        now = self._clock.time()
        if now < self._logged.get((account, why), -math.inf) + LOG_AGAIN_SECONDS:
            return
        self._logged[(account, why)] = now
        emit = log.warning if warn else log.info
        event, action = NOTES.get(why, ("dropped", "not written, not retried"))
        emit(
            "remote_write_" + event,
            account=account,
            minute=minute,
            reason=why,
            status=answer.status,
            detail=answer.detail,
            action=action,
        )

    def _show(self, account: str) -> None:
        self._metrics.remote_write_pending.labels(account).set(self._store.count(account))
        oldest = self._store.oldest(account)
        age = 0.0 if oldest is None else max(0.0, self._clock.time() - oldest)
        self._metrics.remote_write_oldest_age.labels(account).set(age)
        newest = self._store.newest_written(account)
        if newest is not None:
            self._metrics.remote_write_last_minute.labels(account).set(newest)
