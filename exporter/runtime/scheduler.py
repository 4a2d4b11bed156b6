"""The adapter between the areas and APScheduler 3: every area/account poll and every
housekeeping call is a job of one ``AsyncIOScheduler``, jittered, never overlapping, missed
runs coalesced, a failed poll retried with exponential back-off.

APScheduler holds the jobs: each is a ``GridTrigger`` (an ``IntervalTrigger`` whose jitter
stays on the interval's grid) with ``max_instances=1``, ``coalesce=True`` and a
``misfire_grace_time``. APScheduler's own loop runs them, in the daemon on the process clock
(``start``), in a test on the injected clock (tests/rig/schedule.py makes that loop look for
due jobs, as its timer does when it wakes).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, NamedTuple, cast

import structlog
from apscheduler.events import (
    EVENT_JOB_MAX_INSTANCES,
    EVENT_JOB_MISSED,
    EVENT_JOB_SUBMITTED,
    JobEvent,
)
from apscheduler.job import Job
from apscheduler.jobstores.base import JobLookupError
from apscheduler.schedulers.base import STATE_STOPPED
from prometheus_client import Gauge

from exporter.config import stable_hash
from exporter.runtime.aps import GridTrigger, Loop, at
from exporter.runtime.polling import PollRunner
from exporter.runtime.retry import retry_delay
from exporter.support.clock import Clock
from exporter.support.hoststep import HostClockWatch

log = structlog.get_logger("exporter.runtime.scheduler")

# A housekeeping job (``call``) that is this many seconds late waits for its next interval.
CALL_GRACE_SECONDS = 1


class JobKey(NamedTuple):
    """One scheduled poll: its area, its account and the job's name within the area."""

    area: str
    account: str
    job: str = ""

    def __str__(self) -> str:
        """The job's id in APScheduler and in log lines (nothing reads it back)."""
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


class Scheduler:
    """Runs each (area, account) poll on its own interval through the PollRunner.

    A job never runs twice at once: when it falls due while still running, that run is
    skipped (``max_instances=1``). Runs missed (the loop was busy, the process stalled)
    collapse into one (``coalesce``), run late when at most an interval late
    (``misfire_grace_time``), else skipped; the next run is the next instant of the
    interval's grid. The first run of each job is spread over ``min(interval, 10 s)`` (or
    ``first_within``) by a stable per-job offset, and every run gets jitter of up to
    ``min(10 % of the interval, 5 s)``, so accounts do not hit the API in the same second.

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
        self._aps = Loop(before=lambda: self._follow_step(self._clock.time()))
        self._aps.add_listener(
            self._on_event, EVENT_JOB_SUBMITTED | EVENT_JOB_MAX_INSTANCES | EVENT_JOB_MISSED
        )
        self._steps = HostClockWatch()  # steps of the wall clock, which the schedule follows
        self._jobs: dict[str, JobKey] = {}  # the area/account jobs, by their id
        self._failures: dict[str, int] = {}  # failed runs in a row, by job id
        self._running: dict[str, asyncio.Task[None]] = {}
        self._stopped = False

    def every(
        self,
        area: str,
        account: str,
        seconds: float,
        poll: Callable[[], Awaitable[None]],
        job: str = "",
        again: Callable[[], float | None] | None = None,
        first_within: float | None = None,
    ) -> None:
        """Run ``poll`` every ``seconds`` as area/account (``job`` names extra jobs of an area);
        after each run ``again`` may name an instant to run once more before the next tick."""
        key = JobKey(area, account, job)
        spread = min(seconds, 10.0) if first_within is None else first_within
        offset = (stable_hash(str(key)) % 1000) / 1000 * spread
        if not self._timing.spread_first:
            offset = 0.0
        drawn = self._timing.random() * 0.2

        async def run() -> None:
            ok = await self._runner.run(area, account, poll, job)
            self._finished(str(key), ok)
            if again is not None and (when := again()) is not None:
                self._sooner(str(key), when)

        where = {"area": area, "account": account, **({"job": job} if job else {})}
        jitter = max(0.0, min(seconds * 0.1, 5.0))
        self._jobs[str(key)] = key
        # the first run at once (readiness waits for it), standing for the grid's first instant
        grace = max(1, int(seconds))
        self._add(str(key), seconds, jitter, grace, run, offset + drawn, where, early=drawn)
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

        self._add(name, seconds, 0.0, CALL_GRACE_SECONDS, run, first, {"job": name})

    def _add(
        self,
        ident: str,
        seconds: float,
        jitter: float,
        grace: int,
        run: Callable[[], Awaitable[None]],
        first: float,
        where: dict[str, str],
        early: float | None = None,
    ) -> None:
        """``first``: seconds from now to the grid's first instant; ``early``: seconds from
        now to a first run before it (which stands for that instant)."""
        now = self._clock.time()
        start = now + first
        early_at = None if early is None or now + early >= start else now + early
        if self._aps.state == STATE_STOPPED and not self._stopped:
            self._aps.start(paused=True)  # holds jobs; ``start`` lets its loop run them
        # A job added again (same id) replaces the old one; a run of it still going is not
        # cut short and the new one does not overlap it (instances are counted by id).
        self._aps.add_job(
            self._quiet_at_shutdown(ident, run, where),
            GridTrigger(seconds, start, jitter, self._timing.random, early_at is not None),
            id=ident,
            name=ident,
            replace_existing=True,
            max_instances=1,
            coalesce=True,
            misfire_grace_time=grace,
            next_run_time=at(start if early_at is None else early_at),
        )
        self._failures.pop(ident, None)

    def jobs(self) -> list[JobKey]:
        """The area/account jobs scheduled now, sorted."""
        return sorted(self._jobs.values())

    def interval(self, key: JobKey) -> float | None:
        """The interval of a scheduled area/account job; None when there is none."""
        job = self._aps.get_job(str(key)) if str(key) in self._jobs else None
        return None if job is None else cast(float, job.trigger.interval_length)

    def remove_account(self, account: str) -> None:
        """No more runs of the account's jobs (a run going on now ends on its own)."""
        for key in [k for k in self._jobs.values() if k.account == account]:
            with contextlib.suppress(JobLookupError):
                self._aps.remove_job(str(key))
            del self._jobs[str(key)]
            self._failures.pop(str(key), None)
            if self._next_poll is not None:
                with contextlib.suppress(KeyError):
                    self._next_poll.remove(key.account, key.area)

    def _held(self) -> list[Job]:
        return cast(list[Job], self._aps.get_jobs())

    def next_due(self) -> float | None:
        """The instant the next run falls due; None with nothing scheduled."""
        return min((_due(job) for job in self._held() if job.next_run_time), default=None)

    def _done(self, ident: str, task: asyncio.Task[None]) -> None:
        if self._running.get(ident) is task:
            del self._running[ident]

    def _follow_step(self, now: float) -> None:
        """A step of the wall clock (seen against the monotonic one) moves every job with it:
        runs keep their intervals in elapsed time (a clock stepped back does not stop the
        polls for the length of the step; one stepped forward does not skip them as missed)."""
        step = self._steps.observe(now, self._clock.monotonic())
        if not step:
            return
        for job in self._held():
            moved = job.next_run_time and job.next_run_time + timedelta(seconds=step)
            self._aps.modify_job(job.id, trigger=job.trigger.shifted(step), next_run_time=moved)
        for key in self._jobs.values():
            self._publish(key)
        log.warning("schedule_follows_clock_step", step_seconds=round(step, 1))

    def _sooner(self, ident: str, when: float) -> None:
        """Bring the job's next run forward to ``when`` (not before now) if that is sooner;
        the grid goes on after it."""
        job = self._aps.get_job(ident)
        if job is None or job.next_run_time is None:
            return
        when = max(when, self._clock.time())
        if at(when) < job.next_run_time:
            self._aps.modify_job(ident, next_run_time=at(when))
            if (key := self._jobs.get(ident)) is not None:
                self._publish(key)

    def _finished(self, ident: str, ok: bool) -> None:
        """Count the run's outcome; after a failure, bring the job's next run forward to its
        retry when that comes before the next regular run."""
        job = self._aps.get_job(ident)
        if job is None:  # removed while it ran
            return
        if ok:
            self._failures.pop(ident, None)
            return
        failures = self._failures[ident] = self._failures.get(ident, 0) + 1
        now = self._clock.time()
        retry_at = now + retry_delay(failures, self._timing.random())
        if job.next_run_time is not None and retry_at < _due(job):
            self._aps.modify_job(ident, next_run_time=at(retry_at))
            log.info(
                "poll_retry_scheduled",
                job=ident,
                failures=failures,
                in_seconds=round(retry_at - now, 3),
            )
            if (key := self._jobs.get(ident)) is not None:
                self._publish(key)

    def _on_event(self, event: JobEvent) -> None:
        """What APScheduler's loop reports, in the exporter's own log lines and gauge."""
        if event.code == EVENT_JOB_MISSED:
            late = self._clock.time() - event.scheduled_run_time.timestamp()
            log.warning("job_missed", job=event.job_id, late_seconds=round(late, 3))
        elif event.code == EVENT_JOB_MAX_INSTANCES:
            log.warning("job_still_running", job=event.job_id)
        if (key := self._jobs.get(event.job_id)) is not None:
            self._publish(key)

    def _publish(self, key: JobKey) -> None:
        """Set the next-poll gauge of the key's area and account: its jobs' earliest due."""
        due = self.next_poll(key.area, key.account)
        if self._next_poll is not None and due is not None:
            self._next_poll.labels(key.account, key.area).set(due)

    def next_poll(self, area: str, account: str) -> float | None:
        """When the next run of any job of ``area`` for ``account`` is due (None: none)."""
        return min(
            (
                _due(job)
                for ident, k in self._jobs.items()
                if (k.area, k.account) == (area, account)
                and (job := self._aps.get_job(ident)) is not None
                and job.next_run_time is not None
            ),
            default=None,
        )

    def start(self) -> None:
        """Let APScheduler's loop run the jobs as they fall due on the process clock (the
        wall clock: the injected clock must be the system clock here)."""
        if self._aps.state == STATE_STOPPED and not self._stopped:
            self._aps.start(paused=True)
        self._aps.resume()

    def shutdown(self) -> None:
        """Stop the loop and cancel the runs going on (each logs one ``poll_cancelled``)."""
        if self._aps.state != STATE_STOPPED and not self._stopped:
            self._aps.pause()  # at once; AsyncIOScheduler shuts down on the loop's next turn
            self._aps.shutdown(wait=False)
        self._stopped = True
        for task in list(self._running.values()):
            task.cancel()

    def _quiet_at_shutdown(
        self, ident: str, func: Callable[[], Awaitable[None]], where: dict[str, str]
    ) -> Callable[[], Coroutine[Any, Any, None]]:
        """``func`` as a job that ends with one info line when shutdown cancels it.

        Only shutdown cancels a running job; that is expected on every restart, not an
        error. The cancellation ends here, inside the job, so APScheduler's executor sees a
        run that returned and records no job error.
        """

        async def job() -> None:
            task = asyncio.current_task()
            if task is not None:
                self._running[ident] = task  # APScheduler's loop started it: cancel it too
            try:
                await func()
            except asyncio.CancelledError:
                log.info("poll_cancelled", **where)
            finally:
                if task is not None:
                    self._done(ident, task)

        return job


def _due(job: Job) -> float:
    return cast(datetime, job.next_run_time).timestamp()
