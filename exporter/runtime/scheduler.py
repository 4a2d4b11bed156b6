"""One scheduling mechanism for every area: interval jobs on the injected clock, jittered,
never overlapping, missed runs coalesced, a failed poll retried with exponential back-off.

A small loop of our own rather than APScheduler: it reads the ``Clock`` the rest of the
exporter reads, so a test (and tests/golden/golden.py) moves time with a ``FakeClock`` and runs
what falls due with ``run_due``, the same code the loop runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from functools import partial
from typing import Any, NamedTuple

import structlog
from prometheus_client import Gauge

from exporter.config import stable_hash
from exporter.runtime.polling import PollRunner
from exporter.support.clock import Clock
from exporter.support.hoststep import HostClockWatch

log = structlog.get_logger("exporter.runtime.scheduler")

# A housekeeping job (``call``) that is this many seconds late waits for its next interval.
CALL_GRACE_SECONDS = 1.0
# A failed (or postponed) poll is tried again this long after it ended, then twice as long
# after each further failure, plus up to RETRY_JITTER of the wait; a retry that would fall at
# or after the job's next regular run is not made (the regular run is the retry).
RETRY_FIRST_SECONDS = 30.0
RETRY_JITTER = 0.2


def retry_delay(failures: int, fraction: float) -> float:
    """The wait before the retry after ``failures`` consecutive failures (1 or more), with
    ``fraction`` in [0, 1) of the jitter: 30 s, 60 s, 120 s, ... each up to 20% longer."""
    return RETRY_FIRST_SECONDS * float(2 ** (failures - 1)) * (1 + RETRY_JITTER * fraction)


def retries_per_outage(interval: float) -> int:
    """The most retries one outage adds to a job of ``interval`` seconds: the back-off steps
    (without jitter) that end before the next regular run. After them the wait is longer
    than the interval, so an outage that lasts costs no more than the regular runs."""
    spent, n = 0.0, 0
    while (spent := spent + retry_delay(n + 1, 0.0)) < interval:
        n += 1
    return n


class JobKey(NamedTuple):
    """One scheduled poll: its area, its account and the job's name within the area."""

    area: str
    account: str
    job: str = ""

    def __str__(self) -> str:
        """The job's id in log lines (nothing reads it back)."""
        return f"{self.area}/{self.account}/{self.job}"


@dataclass(frozen=True)
class Timing:
    """Where runs fall in time. ``random`` gives a fraction in [0, 1) for the jitter of each
    run; ``spread_first`` spreads first runs by a stable per-job offset. ``EXACT`` (no jitter,
    no spread) runs every job at its first instant and then every interval (the golden test)."""

    random: Callable[[], float] = random.random
    spread_first: bool = True


JITTERED = Timing()
EXACT = Timing(random=lambda: 0.0, spread_first=False)


@dataclass
class _Entry:
    """A job in the schedule: ``base`` is its next instant on the interval's grid, ``due``
    that instant plus this run's jitter, or the retry after a failure when that comes
    sooner; ``failures`` counts the failed runs in a row."""

    ident: str
    seconds: float
    jitter: float
    grace: float
    run: Callable[[], Coroutine[Any, Any, None]]
    base: float
    due: float
    failures: int = 0


class Scheduler:
    """Runs each (area, account) poll on its own interval through the PollRunner.

    A job never runs twice at once: when it falls due while still running, that run is
    skipped. Runs missed (the loop was busy, the process stalled) collapse into one, run late
    when it is at most an interval late (``grace``), else skipped; the next run is the next
    instant of the interval's grid. The first run of each job is spread over
    ``min(interval, 10 s)`` (or ``first_within``) by a stable per-job offset, and every run
    gets jitter of up to ``min(10 % of the interval, 5 s)``, so accounts do not hit the API in
    the same second.

    A poll that fails (or is postponed for want of budget) is tried again ``retry_delay``
    after it ended: 30 s, then twice as long after each further failure, with up to 20 %
    jitter, as long as that comes before its next regular run; a success ends the back-off.
    So one failed poll of a 6 h job is tried again within a minute, not six hours later.
    """

    def __init__(
        self,
        runner: PollRunner,
        clock: Clock,
        timing: Timing = JITTERED,
        next_poll: Gauge | None = None,
    ) -> None:
        self._runner = runner
        self._clock = clock
        self._timing = timing
        # cdnvideo_next_poll_timestamp_seconds{account,area}: the earliest due of the area's jobs
        self._next_poll = next_poll
        self._entries: dict[str, _Entry] = {}
        self._steps = HostClockWatch()  # steps of the wall clock, which the schedule follows
        self._running: dict[str, asyncio.Task[None]] = {}
        self._jobs: dict[str, JobKey] = {}  # the area/account jobs, by their entry's id
        self._loop: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()

    def every(
        self,
        area: str,
        account: str,
        seconds: float,
        poll: Callable[[], Awaitable[None]],
        job: str = "",
        first_within: float | None = None,
    ) -> None:
        """Run ``poll`` every ``seconds`` as area/account (``job`` names extra jobs of an area)."""
        key = JobKey(area, account, job)
        spread = min(seconds, 10.0) if first_within is None else first_within
        offset = (stable_hash(str(key)) % 1000) / 1000 * spread
        if not self._timing.spread_first:
            offset = 0.0
        first = offset + self._timing.random() * 0.2

        async def run() -> None:
            ok = await self._runner.run(area, account, poll, job)
            self._finished(str(key), ok)

        where = {"job": job} if job else {}
        jitter = max(0.0, min(seconds * 0.1, 5.0))
        grace = max(1.0, float(int(seconds)))
        self._add(
            str(key),
            seconds,
            jitter,
            grace,
            _quiet_at_shutdown(run, area=area, account=account, **where),
            first,
        )
        self._jobs[str(key)] = key
        self._publish(key)

    def call(
        self,
        name: str,
        seconds: float,
        func: Callable[[], Awaitable[bool | None]],
        first: float = 0.0,
    ) -> None:
        """A housekeeping job outside the area/account scheme (account discovery). One whose
        ``func`` returns False failed and is retried as a failed poll is."""

        async def run() -> None:
            ok = await func()
            if ok is not None:
                self._finished(name, ok)

        self._add(name, seconds, 0.0, CALL_GRACE_SECONDS, _quiet_at_shutdown(run, job=name), first)

    def _add(
        self,
        ident: str,
        seconds: float,
        jitter: float,
        grace: float,
        run: Callable[[], Coroutine[Any, Any, None]],
        first: float,
    ) -> None:
        at = self._clock.time() + first
        # A job added again (same id) replaces the old one; a run of it still going is not
        # cut short and the new one does not overlap it.
        self._entries[ident] = _Entry(ident, seconds, jitter, grace, run, at, at)
        self._wake.set()

    def jobs(self) -> list[JobKey]:
        """The area/account jobs scheduled now, sorted."""
        return sorted(self._jobs.values())

    def interval(self, key: JobKey) -> float | None:
        """The interval of a scheduled area/account job; None when there is none."""
        entry = self._entries.get(str(key)) if str(key) in self._jobs else None
        return None if entry is None else entry.seconds

    def remove_account(self, account: str) -> None:
        """No more runs of the account's jobs (a run going on now ends on its own)."""
        for key in [k for k in self._jobs.values() if k.account == account]:
            self._entries.pop(str(key), None)
            del self._jobs[str(key)]
            if self._next_poll is not None:
                with contextlib.suppress(KeyError):
                    self._next_poll.remove(key.account, key.area)

    def next_due(self) -> float | None:
        """The instant the next run falls due; None with nothing scheduled."""
        return min((e.due for e in self._entries.values()), default=None)

    def start_due(self) -> list[asyncio.Task[None]]:
        """Start every job due by the clock now, each as its own task (what the loop does
        each time it wakes); returns the tasks started."""
        return [self._launch(entry) for entry in self._take_due()]

    async def run_due(self) -> None:
        """Run every job due by the clock now, one at a time in the order they were
        scheduled, and return when they have finished: a test on a FakeClock gets the same
        result whichever reply arrives first."""
        for entry in self._take_due():
            await self._launch(entry)

    def _take_due(self) -> list[_Entry]:
        """The jobs to run now, in the order they were scheduled. Every job due is moved on
        to its next instant; a run missed by more than its grace, or falling due while the
        job still runs, is skipped."""
        now = self._clock.time()
        self._follow_step(now)
        taken = []
        for entry in sorted(self._entries.values(), key=lambda e: e.due):
            if entry.due > now:
                continue
            retry = entry.due < entry.base  # brought forward by a failure: late from then
            late = now - (entry.due if retry else _last_instant(entry, now))
            _plan_next(entry, now, self._timing.random())
            if (key := self._jobs.get(entry.ident)) is not None:
                self._publish(key)
            if late > entry.grace:
                log.warning("job_missed", job=entry.ident, late_seconds=round(late, 3))
            elif entry.ident in self._running:
                log.warning("job_still_running", job=entry.ident)
            else:
                taken.append(entry)
        return taken

    def _follow_step(self, now: float) -> None:
        """A step of the wall clock (seen against the monotonic one) moves every job with it:
        runs keep their intervals in elapsed time (a clock stepped back does not stop the
        polls for the length of the step; one stepped forward does not skip them as missed)."""
        step = self._steps.observe(now, self._clock.monotonic())
        if not step:
            return
        for entry in self._entries.values():
            entry.base += step
            entry.due += step
        for key in self._jobs.values():
            self._publish(key)
        log.warning("schedule_follows_clock_step", step_seconds=round(step, 1))

    def _finished(self, ident: str, ok: bool) -> None:
        """Count the run's outcome; after a failure, bring the job's next run forward to its
        retry when that comes before the next regular run."""
        entry = self._entries.get(ident)
        if entry is None:  # removed while it ran
            return
        if ok:
            entry.failures = 0
            return
        entry.failures += 1
        retry_at = self._clock.time() + retry_delay(entry.failures, self._timing.random())
        if retry_at < entry.due:
            entry.due = retry_at
            log.info(
                "poll_retry_scheduled",
                job=ident,
                failures=entry.failures,
                in_seconds=round(retry_at - self._clock.time(), 3),
            )
            if (key := self._jobs.get(ident)) is not None:
                self._publish(key)
            self._wake.set()

    def _publish(self, key: JobKey) -> None:
        """Set the next-poll gauge of the key's area and account: its jobs' earliest due."""
        due = self.next_poll(key.area, key.account)
        if self._next_poll is not None and due is not None:
            self._next_poll.labels(key.account, key.area).set(due)

    def next_poll(self, area: str, account: str) -> float | None:
        """When the next run of any job of ``area`` for ``account`` is due (None: none)."""
        return min(
            (
                e.due
                for k in self._jobs.values()
                if (k.area, k.account) == (area, account)
                and (e := self._entries.get(str(k))) is not None
            ),
            default=None,
        )

    def _launch(self, entry: _Entry) -> asyncio.Task[None]:
        task = asyncio.create_task(entry.run(), name=entry.ident)
        self._running[entry.ident] = task
        task.add_done_callback(partial(self._done, entry.ident))
        return task

    def _done(self, ident: str, task: asyncio.Task[None]) -> None:
        if self._running.get(ident) is task:
            del self._running[ident]

    def start(self) -> None:
        """Run the jobs as they fall due, in a task of the running event loop."""
        if self._loop is None:
            self._loop = asyncio.create_task(self._run(), name="scheduler")

    async def _run(self) -> None:
        while True:
            self.start_due()
            due = self.next_due()
            wait = None if due is None else max(0.0, due - self._clock.time())
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), wait)

    def shutdown(self) -> None:
        """Stop the loop and cancel the runs going on (each logs one ``poll_cancelled``)."""
        if self._loop is not None:
            self._loop.cancel()
            self._loop = None
        for task in list(self._running.values()):
            task.cancel()


def _last_instant(entry: _Entry, now: float) -> float:
    """The latest instant of the entry's grid at or before ``now`` (its runs missed collapse
    into this one)."""
    missed = math.floor((now - entry.base) / entry.seconds)
    return entry.base + missed * entry.seconds


def _plan_next(entry: _Entry, now: float, fraction: float) -> None:
    """Move the entry to the first instant of its grid after ``now``, plus fresh jitter."""
    entry.base = _last_instant(entry, now) + entry.seconds
    entry.due = entry.base + fraction * entry.jitter


def _quiet_at_shutdown(
    func: Callable[[], Awaitable[None]], **where: str
) -> Callable[[], Coroutine[Any, Any, None]]:
    """``func`` as a job that ends with one info line when shutdown cancels it.

    Only shutdown cancels a running job; that is expected on every restart, not an error. The
    job's task ends here (nothing awaits it but ``run_due``), so the cancellation is not
    passed on.
    """

    async def job() -> None:
        try:
            await func()
        except asyncio.CancelledError:
            log.info("poll_cancelled", **where)

    return job
