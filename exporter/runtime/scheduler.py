"""One scheduling mechanism for every area: interval jobs on the injected clock, jittered,
never overlapping, missed runs coalesced.

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

from exporter.config import stable_hash
from exporter.runtime.polling import PollRunner
from exporter.support.clock import Clock

log = structlog.get_logger("exporter.runtime.scheduler")

# A housekeeping job (``call``) that is this many seconds late waits for its next interval.
CALL_GRACE_SECONDS = 1.0


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
    that instant plus this run's jitter."""

    ident: str
    seconds: float
    jitter: float
    grace: float
    run: Callable[[], Coroutine[Any, Any, None]]
    base: float
    due: float


class Scheduler:
    """Runs each (area, account) poll on its own interval through the PollRunner.

    A job never runs twice at once: when it falls due while still running, that run is
    skipped. Runs missed (the loop was busy, the process stalled) collapse into one, run late
    when it is at most an interval late (``grace``), else skipped; the next run is the next
    instant of the interval's grid. The first run of each job is spread over
    ``min(interval, 10 s)`` (or ``first_within``) by a stable per-job offset, and every run
    gets jitter of up to ``min(10 % of the interval, 5 s)``, so accounts do not hit the API in
    the same second.
    """

    def __init__(self, runner: PollRunner, clock: Clock, timing: Timing = JITTERED) -> None:
        self._runner = runner
        self._clock = clock
        self._timing = timing
        self._entries: dict[str, _Entry] = {}
        self._running: dict[str, asyncio.Task[None]] = {}
        self._jobs: set[JobKey] = set()
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
            await self._runner.run(area, account, poll, job)

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
        self._jobs.add(key)

    def call(
        self, name: str, seconds: float, func: Callable[[], Awaitable[None]], first: float = 0.0
    ) -> None:
        """A housekeeping job outside the area/account scheme (account discovery)."""
        self._add(name, seconds, 0.0, CALL_GRACE_SECONDS, _quiet_at_shutdown(func, job=name), first)

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
        return sorted(self._jobs)

    def interval(self, key: JobKey) -> float | None:
        """The interval of a scheduled area/account job; None when there is none."""
        entry = self._entries.get(str(key)) if key in self._jobs else None
        return None if entry is None else entry.seconds

    def remove_account(self, account: str) -> None:
        """No more runs of the account's jobs (a run going on now ends on its own)."""
        for key in [k for k in self._jobs if k.account == account]:
            self._entries.pop(str(key), None)
            self._jobs.discard(key)

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
        taken = []
        for entry in sorted(self._entries.values(), key=lambda e: e.due):
            if entry.due > now:
                continue
            late = now - _last_instant(entry, now)
            _plan_next(entry, now, self._timing.random())
            if late > entry.grace:
                log.warning("job_missed", job=entry.ident, late_seconds=round(late, 3))
            elif entry.ident in self._running:
                log.warning("job_still_running", job=entry.ident)
            else:
                taken.append(entry)
        return taken

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
