"""APScheduler's own loop (the daemon's ``Scheduler.start``) on the process clock.

Here the process clock is what is under test, so freezegun sets it: ``real_asyncio=True``
leaves the event loop's own timers (``loop.time()``, monotonic) on real time, so the loop
still wakes APScheduler, while ``time.time()`` and ``datetime.now()``, which APScheduler and
``SystemClock`` read, are frozen and move only with ``frozen.tick``. After a tick the test
wakes APScheduler by adding a far job (adding a job wakes a running scheduler), so nothing
waits on real time, except the one test that proves the loop's own timer fires a job at the
minute boundary (tick=True: the frozen clock runs, a fraction of a second).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

import pytest
from freezegun import freeze_time
from freezegun.api import FrozenDateTimeFactory, StepTickTimeFactory, TickingDateTimeFactory
from structlog.testing import capture_logs

from exporter.runtime.polling import PollRunner
from exporter.runtime.scheduler import EXACT, Scheduler
from exporter.runtime.selfmetrics import SelfMetrics
from exporter.support.clock import SystemClock

NOON = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
T0 = NOON.timestamp()
SAFETY_SECONDS = 60.0  # a safety net against a hang, never a bound

Frozen = FrozenDateTimeFactory | StepTickTimeFactory | TickingDateTimeFactory


def scheduler(metrics: SelfMetrics | None = None) -> Scheduler:
    clock = SystemClock()
    return Scheduler(PollRunner(metrics or SelfMetrics(), clock), clock, EXACT)


def counting(runs: list[float]) -> Callable[[], Awaitable[None]]:
    async def poll() -> None:
        runs.append(SystemClock().time() - T0)

    return poll


async def wake(s: Scheduler) -> None:
    """Let a running APScheduler look at its jobs now: adding a job wakes it (a job far in
    the future, which never runs here); its wake-up and the runs it starts take a few turns
    of the loop."""

    async def never() -> None:
        raise AssertionError("the far job ran")

    s.call("far", 86_400.0, never, first=86_400.0)
    for _ in range(20):
        await asyncio.sleep(0)


async def started_every_15_s(area: str, poll: Callable[[], Awaitable[None]]) -> Scheduler:
    """A scheduler on the process clock with one job every 15 s, its loop started and the
    job's first run (at once) begun."""
    s = scheduler()
    s.every(area, "acme", 15.0, poll)
    s.start()
    await wake(s)
    return s


async def test_the_loop_runs_a_job_when_the_process_clock_reaches_its_instant() -> None:
    runs: list[float] = []
    with freeze_time(NOON, real_asyncio=True) as frozen:
        s = await started_every_15_s("traffic", counting(runs))
        frozen.tick(14.9)
        await wake(s)
        assert runs == [0.0]
        frozen.tick(0.1)
        await wake(s)
        s.shutdown()
    assert runs == [0.0, 15.0]
    assert s.next_due() == T0 + 30.0


async def test_the_loops_own_timer_fires_a_job_on_the_minute_boundary() -> None:
    """tick=True: the frozen clock runs from 11:59:59.8; the job's first instant is noon and
    nothing but APScheduler's timer (on the loop's real monotonic time) wakes it."""
    ran = asyncio.Event()
    at: list[datetime] = []

    async def poll() -> None:
        at.append(datetime.now(UTC))
        ran.set()

    with freeze_time("2026-01-01 11:59:59.8", tick=True, real_asyncio=True):
        s = scheduler()
        s.call("minute", 60.0, poll, first=T0 - SystemClock().time())
        s.start()
        await asyncio.wait_for(ran.wait(), SAFETY_SECONDS)
        s.shutdown()
    assert at[0] >= NOON
    assert (at[0].hour, at[0].minute) == (12, 0)
    assert s.next_due() == pytest.approx(T0 + 60.0, abs=1e-3)


async def test_the_loop_coalesces_runs_missed_while_stalled_and_keeps_the_grid() -> None:
    runs: list[float] = []
    with freeze_time(NOON, real_asyncio=True) as frozen:
        s = await started_every_15_s("dvr", counting(runs))
        frozen.tick(30.0)  # 15 and 30 both due, 15 s and 0 s late (grace 15 s): one run
        await wake(s)
        frozen.tick(40.0)  # 45 and 60 missed, 60 is 10 s late: one run at 70
        await wake(s)
        s.shutdown()
    assert runs == [0.0, 30.0, 70.0]
    assert s.next_due() == T0 + 75.0


async def test_the_loop_skips_a_run_late_by_more_than_its_grace_with_one_job_missed_line() -> None:
    runs: list[float] = []
    with freeze_time(NOON, real_asyncio=True) as frozen:
        s = scheduler()
        s.call("discover", 600.0, counting(runs))
        s.start()
        await wake(s)
        frozen.tick(605.0)
        with capture_logs() as events:
            await wake(s)
        s.shutdown()
    assert runs == [0.0]
    assert [(e["event"], e.get("job"), e.get("late_seconds")) for e in events] == [
        ("job_missed", "discover", 5.0)
    ]
    assert s.next_due() == T0 + 1200.0


async def test_the_loop_never_runs_a_job_twice_at_once() -> None:
    release = asyncio.Event()
    starts: list[float] = []

    async def slow() -> None:
        starts.append(SystemClock().time() - T0)
        await release.wait()

    with freeze_time(NOON, real_asyncio=True) as frozen:
        s = await started_every_15_s("restream", slow)
        frozen.tick(15.0)
        with capture_logs() as events:
            await wake(s)
        release.set()
        for _ in range(20):  # the run ends; APScheduler counts its instance done
            await asyncio.sleep(0)
        frozen.tick(15.0)
        await wake(s)
        s.shutdown()
    assert starts == [0.0, 30.0]
    assert [e["event"] for e in events] == ["job_still_running"]


class SteppedClock:
    """The process's wall clock (frozen) beside a monotonic clock the test moves: a step of
    the wall clock moves ``time`` alone, as NTP does."""

    def __init__(self) -> None:
        self.elapsed = 0.0

    def time(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return self.elapsed


@pytest.mark.parametrize("step", [-900.0, 600.0])
async def test_the_loop_moves_the_schedule_with_a_step_of_the_wall_clock(step: float) -> None:
    runs: list[float] = []
    clock = SteppedClock()
    with freeze_time(NOON, real_asyncio=True) as frozen:
        s = Scheduler(PollRunner(SelfMetrics(), clock), clock, EXACT)
        s.every("traffic", "acme", 15.0, counting(runs))
        s.start()
        await wake(s)
        frozen.tick(5.0)
        clock.elapsed += 5.0
        frozen.tick(step)  # stepped: the monotonic clock does not move
        frozen.tick(10.0)
        clock.elapsed += 10.0
        with capture_logs() as events:
            await wake(s)
        s.shutdown()
    assert runs == [0.0, step + 15.0]
    assert [e["event"] for e in events if e["log_level"] == "warning"] == [
        "schedule_follows_clock_step"
    ]
    assert s.next_due() == T0 + step + 30.0


async def test_a_poll_cut_short_by_shutdown_is_logged_once_as_info_not_as_a_job_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    started = asyncio.Event()
    finished: list[str] = []

    async def slow_poll() -> None:
        started.set()
        await asyncio.sleep(SAFETY_SECONDS)
        finished.append("never")

    metrics = SelfMetrics()
    s = scheduler(metrics)
    s.every("traffic", "acme", 15.0, slow_poll, first_within=0.0)
    caplog.set_level(logging.INFO)
    with capture_logs() as events:
        s.start()
        await asyncio.wait_for(started.wait(), SAFETY_SECONDS)
        s.shutdown()
        for _ in range(20):  # let the cancelled job unwind
            await asyncio.sleep(0)
    errors = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert errors == [], [r.getMessage() for r in errors]
    assert events == [
        {"event": "poll_cancelled", "log_level": "info", "area": "traffic", "account": "acme"}
    ]
    assert finished == []
    # Cut short at shutdown says nothing about the upstream: no outcome was recorded.
    up = metrics.registry.get_sample_value("cdnvideo_up", {"account": "acme", "area": "traffic"})
    assert up is None


async def test_a_housekeeping_job_cut_short_by_shutdown_is_not_a_job_error_either(
    caplog: pytest.LogCaptureFixture,
) -> None:
    started = asyncio.Event()

    async def slow_discovery() -> None:
        started.set()
        await asyncio.sleep(SAFETY_SECONDS)

    s = scheduler()
    s.call("discover", 600.0, slow_discovery)
    caplog.set_level(logging.INFO)
    with capture_logs() as events:
        s.start()
        await asyncio.wait_for(started.wait(), SAFETY_SECONDS)
        s.shutdown()
        for _ in range(20):
            await asyncio.sleep(0)
    errors = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert errors == [], [r.getMessage() for r in errors]
    assert events == [{"event": "poll_cancelled", "log_level": "info", "job": "discover"}]
