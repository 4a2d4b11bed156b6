"""APScheduler's own loop on the injected clock: what ``Scheduler.start`` lets run on the
process clock in the daemon, driven by a test, the golden exposition and the simulation.

``run_due(scheduler)`` makes APScheduler look for due jobs once, as its loop does each time it
wakes (``BaseScheduler._process_jobs``): the jobs due, each moved on through its trigger,
missed runs coalesced, a run skipped while the job still runs (``max_instances``), each run
submitted to APScheduler's asyncio executor, which skips one later than its
``misfire_grace_time``. APScheduler reads the time from ``datetime.now``; here it reads the
scheduler's injected clock instead. The runs submitted then start one at a time, in the order
APScheduler submitted them, each awaited before the next starts, so a test on a FakeClock
gets the same result whichever reply arrives first. ``start_due`` starts them side by side
and returns their tasks (a run that waits, a benchmark).

Nothing here starts APScheduler's timer: between two looks nothing runs, and the test moves
the clock. tests/runtime/test_scheduler.py pins the pieces of APScheduler this relies on.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import Callable, Iterator
from datetime import datetime, tzinfo
from functools import partial
from typing import Any
from unittest import mock

import apscheduler.executors.base
import apscheduler.schedulers.base
from apscheduler.executors.asyncio import AsyncIOExecutor
from apscheduler.job import Job
from apscheduler.schedulers.base import STATE_RUNNING, STATE_STOPPED

from exporter.runtime.scheduler import Scheduler
from exporter.support.clock import Clock

__all__ = ["run_due", "start_due"]

Run = tuple[Job, list[datetime]]  # a job and the run times APScheduler submitted


class _Held(AsyncIOExecutor):  # type: ignore[misc]  # APScheduler 3 ships no types
    """APScheduler's asyncio executor, whose runs wait until the rig starts them: APScheduler
    counts a run as an instance of its job when it submits it, as it does in the daemon."""

    def __init__(self) -> None:
        super().__init__()
        self.held: list[Run] = []

    def _do_submit_job(self, job: Job, run_times: list[datetime]) -> None:
        self.held.append((job, run_times))

    def begin(self, run: Run) -> asyncio.Future[Any]:
        """Start the run as APScheduler's executor starts one: its task, and the callback that
        ends the instance and dispatches the run's events."""
        pending = set(self._pending_futures)
        super()._do_submit_job(*run)
        (started,) = self._pending_futures - pending
        return started  # type: ignore[no-any-return]


_EXECUTORS: weakref.WeakKeyDictionary[Any, _Held] = weakref.WeakKeyDictionary()


@contextlib.contextmanager
def _on(clock: Clock) -> Iterator[None]:
    """APScheduler's ``datetime.now`` (the scheduler's look and the executor's grace check)
    reads ``clock``."""

    class Now(datetime):
        @classmethod
        def now(cls, tz: tzinfo | None = None) -> datetime:  # type: ignore[override]
            return datetime.fromtimestamp(clock.time(), tz)

    with (
        mock.patch.object(apscheduler.schedulers.base, "datetime", Now),
        mock.patch.object(apscheduler.executors.base, "datetime", Now),
    ):
        yield


def _look(scheduler: Scheduler) -> list[Callable[[], asyncio.Future[Any]]]:
    """APScheduler's look for due jobs, once, on the scheduler's clock: for each run it
    submitted, what starts it."""
    aps = scheduler._aps
    if aps.state == STATE_STOPPED:  # no job was ever added
        return []
    if (executor := _EXECUTORS.get(aps)) is None:
        executor = _EXECUTORS[aps] = _Held()
        aps.remove_executor("default")
        aps.add_executor(executor, "default")
    state, aps.state = aps.state, STATE_RUNNING  # held paused: its timer never looks itself
    try:
        with _on(scheduler._clock):
            aps._process_jobs()
    finally:
        aps.state = state
    runs, executor.held = executor.held, []
    return [partial(executor.begin, run) for run in runs]


async def run_due(scheduler: Scheduler) -> None:
    """Run every job due by the scheduler's clock now, one at a time, and return when they
    have finished."""
    for begin in _look(scheduler):
        with _on(scheduler._clock):
            await begin()


async def start_due(scheduler: Scheduler) -> list[asyncio.Future[Any]]:
    """Start every job due by the scheduler's clock now, side by side; their tasks, each past
    APScheduler's grace check."""
    starts = _look(scheduler)
    with _on(scheduler._clock):
        started = [begin() for begin in starts]
        await asyncio.sleep(0)  # each task's first step: the grace check, the job begun
    return started
