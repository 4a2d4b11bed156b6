"""The two pieces of APScheduler 3 the scheduler (``exporter/runtime/scheduler.py``) builds
on: ``GridTrigger``, APScheduler's interval trigger with the jitter every job of the exporter
gets (each run an instant of the interval's grid plus a fresh draw from the ``Timing``), and
``Loop``, its ``AsyncIOScheduler`` whose job store (``Jobs``) calls a hook where the scheduler
follows a step of the wall clock.

APScheduler 3's own ``IntervalTrigger(jitter=...)`` adds the jitter to the previous run time,
so it accumulates (a 15 s job with 1.5 s of jitter would run every 15.75 s on average, and a
job's runs would drift across the minute), and it draws from the module ``random``, which a
seeded simulation cannot replay. Here the jitter is added to the grid instant, never carried
on, and drawn from an injected function. Pure, as every trigger: the time comes in as
arguments, so a test drives it on any clock.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import cast

from apscheduler.job import Job
from apscheduler.jobstores.memory import MemoryJobStore
from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.schedulers.base import STATE_RUNNING
from apscheduler.triggers.interval import IntervalTrigger


def at(seconds: float) -> datetime:
    """Unix seconds as the aware UTC datetime APScheduler works in (microseconds)."""
    return datetime.fromtimestamp(seconds, UTC)


class GridTrigger(IntervalTrigger):  # type: ignore[misc]  # APScheduler 3 ships no types
    """Every ``seconds`` from ``start`` (the grid's first instant), each run plus up to
    ``jitter`` seconds: ``draw()`` in [0, 1) of it. With ``early``, a run before ``start`` (the
    job's first run, brought forward to when it was added) stands for that first instant:
    the next run is an interval after ``start``."""

    def __init__(
        self,
        seconds: float,
        start: float,
        jitter: float,
        draw: Callable[[], float],
        early: bool = False,
    ) -> None:
        super().__init__(seconds=seconds, start_date=at(start), timezone=UTC)
        self.spread = jitter
        self.draw = draw
        self.early = early

    def get_next_fire_time(self, previous: datetime | None, now: datetime) -> datetime:
        """The grid instant after ``previous`` (a run, jittered or brought forward by a
        retry: which grid interval it fell in counts), plus a fresh jitter; with no previous
        run, APScheduler's own answer (``start``, or the next grid instant after ``now``)."""
        if previous is None:
            base = cast(datetime, super().get_next_fire_time(None, now))
        else:
            start, interval = cast(datetime, self.start_date), cast(timedelta, self.interval)
            base = start + interval * (math.floor((previous - start) / interval) + 1)
            if self.early and previous < start:
                base = start + interval
        if self.spread:
            base += timedelta(seconds=self.draw() * self.spread)
        return base

    def shifted(self, seconds: float) -> GridTrigger:
        """The same grid moved by ``seconds`` (the wall clock was stepped)."""
        start = cast(datetime, self.start_date).timestamp() + seconds
        length = cast(float, self.interval_length)
        return GridTrigger(length, start, self.spread, self.draw, self.early)


class Jobs(MemoryJobStore):  # type: ignore[misc]  # APScheduler 3 ships no types
    """APScheduler's in-memory job store, which calls ``before`` each time APScheduler asks
    it for the jobs due (at the start of each look for due jobs) and hands them out by due
    time, then in the order they were added (a job replaced keeps its place), so jobs due at
    the same instant are started in that order."""

    def __init__(self, before: Callable[[], None]) -> None:
        super().__init__()
        self._before = before
        self._added: dict[str, int] = {}
        self._count = itertools.count()

    def add_job(self, job: Job) -> None:
        super().add_job(job)
        self._added[job.id] = next(self._count)

    def remove_job(self, job_id: str) -> None:
        super().remove_job(job_id)
        self._added.pop(job_id, None)

    def remove_all_jobs(self) -> None:
        super().remove_all_jobs()
        self._added.clear()

    def get_due_jobs(self, now: datetime) -> list[Job]:
        self._before()
        due = cast(list[Job], super().get_due_jobs(now))
        return sorted(due, key=lambda job: (job.next_run_time, self._added[job.id]))


class Loop(AsyncIOScheduler):  # type: ignore[misc]  # APScheduler 3 ships no types
    """APScheduler's ``AsyncIOScheduler``, which calls ``before`` each time it looks for due
    jobs while running (the adapter follows a step of the wall clock there, before APScheduler
    compares)."""

    def __init__(self, before: Callable[[], None]) -> None:
        super().__init__(timezone=UTC, jobstores={"default": Jobs(self._running_before)})
        self._before = before

    def _running_before(self) -> None:
        if self.state == STATE_RUNNING:
            self._before()
