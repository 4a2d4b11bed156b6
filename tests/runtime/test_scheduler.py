"""The scheduler's jobs, run by APScheduler's own loop on the injected clock (tests/rig/
schedule.py's ``run_due``): interval, jitter, no overlap, coalesced misses, first runs at
once on spread grids, the order of jobs due at once, removal, retries, steps of the wall
clock; and the pieces of APScheduler that rig drives, pinned. APScheduler's loop woken by its
own timer on the process clock: tests/runtime/test_scheduler_loop.py."""

from __future__ import annotations

import asyncio
import hashlib
import inspect
from collections.abc import Awaitable, Callable

import pytest
from apscheduler.executors.asyncio import AsyncIOExecutor
from apscheduler.executors.base import BaseExecutor, run_coroutine_job
from apscheduler.schedulers.base import BaseScheduler
from structlog.testing import capture_logs

from exporter.runtime.polling import PollRunner
from exporter.runtime.retry import retries_per_outage
from exporter.runtime.scheduler import EXACT, JobKey, Scheduler, Timing
from exporter.runtime.selfmetrics import SelfMetrics
from exporter.support.clock import FakeClock
from tests.rig.schedule import run_due, start_due

T0 = 1_767_225_600.0
SAFETY_SECONDS = 60.0  # a safety net against a hang, never a bound


def scheduler(clock: FakeClock, timing: Timing = EXACT) -> Scheduler:
    return Scheduler(PollRunner(SelfMetrics(), clock), clock, timing)


def counting(runs: list[float], clock: FakeClock) -> Callable[[], Awaitable[None]]:
    async def poll() -> None:
        runs.append(clock.time() - T0)

    return poll


async def test_a_job_runs_at_its_first_instant_and_then_once_every_interval() -> None:
    clock = FakeClock(T0)
    s = scheduler(clock)
    runs: list[float] = []
    s.every("traffic", "acme", 15.0, counting(runs, clock))
    for step in (0.0, 14.9, 0.1, 10.0, 5.0, 15.0):
        clock.advance(step)
        await run_due(s)
    assert runs == [0.0, 15.0, 30.0, 45.0]
    assert s.next_due() == T0 + 60.0


async def test_a_job_that_asks_to_run_again_sooner_runs_then_keeps_its_grid() -> None:
    """``again`` after a run (the traffic poll held back by its budget) brings the next run
    forward to the instant it names, never later than the tick, and the grid goes on."""
    clock = FakeClock(T0)
    s = scheduler(clock)
    runs: list[float] = []
    asks = iter([T0 + 4.0, None, T0 + 40.0, None])  # the third asks past its tick: no effect
    s.every("traffic", "acme", 15.0, counting(runs, clock), again=lambda: next(asks, None))
    await run_due(s)
    assert s.next_due() == T0 + 4.0
    for step in (4.0, 11.0, 15.0, 15.0):
        clock.advance(step)
        await run_due(s)
    assert runs == [0.0, 4.0, 15.0, 30.0, 45.0]


@pytest.mark.parametrize("step", [-900.0, 600.0])
async def test_a_step_of_the_wall_clock_moves_the_schedule_with_it(step: float) -> None:
    """The wall clock stepped (NTP) while the monotonic clock runs on: every 15 s of elapsed
    time a run, neither 15 minutes without one (stepped back) nor runs skipped as missed."""
    clock = FakeClock(T0)
    s = scheduler(clock)
    runs: list[float] = []
    s.every("traffic", "acme", 15.0, counting(runs, clock))
    await run_due(s)
    clock.advance(5.0)
    clock.step(step)
    with capture_logs() as events:
        for _ in range(4):
            clock.advance(10.0 if not runs[1:] else 15.0)
            await run_due(s)
    assert runs == [0.0, *(step + t for t in (15.0, 30.0, 45.0, 60.0))]
    assert [e["event"] for e in events if e["log_level"] == "warning"] == [
        "schedule_follows_clock_step"
    ]
    assert s.next_due() == T0 + step + 75.0


async def test_a_run_falling_due_while_the_last_one_still_runs_is_skipped_not_overlapped() -> None:
    clock = FakeClock(T0)
    s = scheduler(clock)
    release = asyncio.Event()
    starts: list[float] = []

    async def slow() -> None:
        starts.append(clock.time() - T0)
        await release.wait()

    s.every("restream", "acme", 15.0, slow)
    (first,) = await start_due(s)
    await asyncio.sleep(0)  # the poll starts and waits
    clock.advance(15.0)
    with capture_logs() as events:
        assert await start_due(s) == []
    assert starts == [0.0]
    assert [e["event"] for e in events] == ["job_still_running"]
    release.set()
    await asyncio.wait_for(first, SAFETY_SECONDS)
    clock.advance(15.0)
    await run_due(s)
    assert starts == [0.0, 30.0]


async def test_runs_missed_while_stalled_collapse_into_one_and_the_grid_is_kept() -> None:
    clock = FakeClock(T0)
    s = scheduler(clock)
    runs: list[float] = []
    s.every("dvr", "acme", 15.0, counting(runs, clock))
    await run_due(s)
    clock.advance(40.0)  # the runs at 15 and 30 were missed
    await run_due(s)
    await run_due(s)
    assert runs == [0.0, 40.0]
    assert s.next_due() == T0 + 45.0


async def test_a_housekeeping_job_late_by_more_than_its_grace_waits_for_its_next_instant() -> None:
    clock = FakeClock(T0)
    s = scheduler(clock)
    runs: list[float] = []
    s.call("discover", 600.0, counting(runs, clock))
    await run_due(s)
    clock.advance(605.0)
    with capture_logs() as events:
        await run_due(s)
    assert runs == [0.0]
    assert [e["event"] for e in events] == ["job_missed"]
    assert s.next_due() == T0 + 1200.0


async def test_first_runs_start_at_once_and_the_grid_follows_a_stable_offset_within_10_s() -> None:
    """Every job's first run falls due when it is added (readiness waits for the first polls,
    so none waits for its turn), and stands for the first instant of its grid: the next run
    is an interval after that instant, which a stable per-job offset spreads over
    min(interval, 10 s) (or ``first_within``)."""
    no_jitter = Timing(random=lambda: 0.0)

    async def grid_offset(area: str, account: str, seconds: float, **kw: float) -> float:
        clock = FakeClock(T0)
        s = scheduler(clock, no_jitter)
        runs: list[float] = []
        s.every(area, account, seconds, counting(runs, clock), **kw)
        assert s.next_due() == T0  # at once
        await run_due(s)
        assert runs == [0.0]
        following = s.next_due()
        assert following is not None
        clock.set(following)
        await run_due(s)
        assert runs == [0.0, following - T0]  # the early run took the grid's first instant
        return following - T0 - seconds

    offsets = [await grid_offset("traffic", f"account-{n}", 15.0) for n in range(20)]
    assert len(set(offsets)) == 20
    assert all(0.0 <= o < 10.0 for o in offsets)
    assert await grid_offset("traffic", "account-3", 15.0) == offsets[3]
    wide = [
        await grid_offset("restream", f"account-{n}", 600.0, first_within=60.0) for n in range(20)
    ]
    assert all(0.0 <= o < 60.0 for o in wide)
    assert max(wide) > 10.0


async def test_every_run_gets_jitter_of_up_to_a_tenth_of_the_interval_and_at_most_5_s() -> None:
    timing = Timing(random=lambda: 0.5, spread_first=False)
    for seconds, jitter in ((15.0, 0.75), (600.0, 2.5)):
        clock = FakeClock(T0)
        s = scheduler(clock, timing)
        s.every("traffic", "acme", seconds, counting([], clock))
        assert s.next_due() == T0 + 0.1  # a first run gets up to 0.2 s
        clock.set(T0 + 0.1)
        await run_due(s)
        assert s.next_due() == T0 + 0.1 + seconds + jitter


async def test_the_jitter_is_drawn_afresh_on_the_grid_and_never_carried_on() -> None:
    """APScheduler's own IntervalTrigger adds the jitter to the previous (jittered) run, so
    it piles up; every run here is an instant of the grid plus its own draw."""
    clock = FakeClock(T0)
    s = scheduler(clock, Timing(random=lambda: 0.5, spread_first=False))
    dues = []
    s.every("traffic", "acme", 15.0, counting([], clock))
    for _ in range(4):
        clock.set(s.next_due() or 0.0)
        await run_due(s)
        dues.append((s.next_due() or 0.0) - T0)
    assert dues == pytest.approx([15.85, 30.85, 45.85, 60.85], abs=1e-6)


async def test_jobs_due_at_the_same_instant_start_in_the_order_they_were_added() -> None:
    """Not in the order of their ids (APScheduler's own): the golden exposition lists the
    series of the areas in the order their first polls ran. A job replaced keeps its place."""
    clock = FakeClock(T0)
    s = scheduler(clock)
    ran: list[str] = []

    def poll(name: str) -> Callable[[], Awaitable[None]]:
        async def run() -> None:
            ran.append(name)

        return run

    for area in ("traffic", "restream", "dvr", "talking_head"):
        s.every(area, "acme", 15.0, poll(area))
    s.call("readiness", 15.0, poll("readiness"))
    s.every("restream", "acme", 15.0, poll("restream again"))
    await run_due(s)
    assert ran == ["traffic", "restream again", "dvr", "talking_head", "readiness"]


# What tests/rig/schedule.py relies on in APScheduler 3, as installed: the look for due jobs
# reads ``datetime.now`` and skips while paused; the executor counts an instance when a run is
# submitted, starts a coroutine job as a task it keeps in ``_pending_futures``, and its grace
# check reads ``datetime.now``.
APSCHEDULER_PIECES = {
    BaseScheduler._process_jobs: "efd3944de4e2c69e",
    BaseExecutor.submit_job: "6856c7933692212c",
    AsyncIOExecutor._do_submit_job: "ebbba1ebb65dddd2",
    run_coroutine_job: "7e447642793a3284",
}


@pytest.mark.parametrize("piece", APSCHEDULER_PIECES, ids=lambda f: f.__qualname__)
def test_the_pieces_of_apscheduler_the_rig_drives_are_the_ones_it_was_written_for(
    piece: Callable[..., object],
) -> None:
    source = hashlib.sha256(inspect.getsource(piece).encode()).hexdigest()[:16]
    assert source == APSCHEDULER_PIECES[piece], (
        f"APScheduler's {piece.__qualname__} changed: re-check that tests/rig/schedule.py "
        "still drives APScheduler's own loop (what it patches, holds and starts, above), "
        "then set the new hash here"
    )


async def test_a_job_scheduled_again_replaces_the_old_one_as_a_reload_does() -> None:
    clock = FakeClock(T0)
    s = scheduler(clock)
    runs: list[float] = []
    s.every("restream", "acme", 15.0, counting(runs, clock))
    await run_due(s)
    clock.advance(10.0)
    s.remove_account("acme")  # Service.reconfigure: an interval changed
    s.every("restream", "acme", 45.0, counting(runs, clock))
    for _ in range(4):
        clock.advance(15.0)
        await run_due(s)
    # the new job's first instant is 10 (added then), run at the next look (25, within its
    # grace), then every 45 s on its own grid: 55; the old 15 s grid (15, 30, 45, 60) is gone
    assert runs == [0.0, 25.0, 55.0]
    assert s.interval(JobKey("restream", "acme")) == 45.0
    assert s.jobs() == [JobKey("restream", "acme")]


async def test_an_account_removed_is_not_run_again_and_the_others_are() -> None:
    clock = FakeClock(T0)
    s = scheduler(clock)
    runs: list[float] = []
    kept: list[float] = []
    s.every("traffic", "gone", 15.0, counting(runs, clock))
    s.every("restream", "gone", 15.0, counting(runs, clock), job="history")
    s.every("traffic", "kept", 15.0, counting(kept, clock))
    await run_due(s)
    assert s.interval(JobKey("restream", "gone", "history")) == 15.0
    s.remove_account("gone")
    assert s.jobs() == [JobKey("traffic", "kept")]
    assert s.interval(JobKey("traffic", "gone")) is None
    clock.advance(15.0)
    await run_due(s)
    assert runs == [0.0, 0.0]
    assert kept == [0.0, 15.0]


def failing_until(
    clock: FakeClock, runs: list[float], heal_at: float
) -> Callable[[], Awaitable[None]]:
    async def poll() -> None:
        runs.append(clock.time() - T0)
        if clock.time() - T0 < heal_at:
            raise RuntimeError("upstream down")

    return poll


async def run_until(s: Scheduler, clock: FakeClock, end: float) -> None:
    while (due := s.next_due()) is not None and due <= T0 + end:
        clock.set(due)
        await run_due(s)


async def test_a_failed_poll_is_retried_after_30_s_doubling_until_it_succeeds() -> None:
    clock = FakeClock(T0)
    s = scheduler(clock)
    runs: list[float] = []
    s.every("talking_head", "acme", 21600.0, failing_until(clock, runs, heal_at=100.0))
    await run_until(s, clock, 21600.0)
    # fails at 0, retried at 30 and 90 (30 + 60): fails; at 210 (90 + 120) it succeeds, and
    # then the job keeps its grid: the next run is the regular one at 6 h.
    assert runs == [0.0, 30.0, 90.0, 210.0, 21600.0]
    assert s.next_due() == T0 + 43200.0


async def test_a_retry_gets_up_to_a_fifth_more_wait_from_the_timing() -> None:
    clock = FakeClock(T0)
    s = scheduler(clock, Timing(random=lambda: 0.5, spread_first=False))
    runs: list[float] = []
    s.every("talking_head", "acme", 21600.0, failing_until(clock, runs, heal_at=1.0))
    clock.set(T0 + 0.1)
    await run_due(s)
    assert s.next_due() == T0 + 0.1 + 30.0 * 1.1


async def test_retries_of_a_lasting_outage_stop_at_the_interval() -> None:
    clock = FakeClock(T0)
    s = scheduler(clock)
    runs: list[float] = []
    s.every("talking_head", "acme", 21600.0, failing_until(clock, runs, heal_at=10**9))
    await run_until(s, clock, 3 * 21600.0)
    retries = [r for r in runs if r % 21600.0]
    assert retries == [30.0, 90.0, 210.0, 450.0, 930.0, 1890.0, 3810.0, 7650.0, 15330.0]
    assert len(retries) == retries_per_outage(21600.0)
    assert [r for r in runs if not r % 21600.0] == [0.0, 21600.0, 43200.0, 64800.0]


async def test_a_job_of_a_short_interval_keeps_its_grid_when_it_fails() -> None:
    clock = FakeClock(T0)
    s = scheduler(clock)
    runs: list[float] = []
    s.every("traffic", "acme", 15.0, failing_until(clock, runs, heal_at=10**9))
    await run_until(s, clock, 60.0)
    assert runs == [0.0, 15.0, 30.0, 45.0, 60.0]


async def test_the_next_poll_gauge_says_when_the_retry_is_due() -> None:
    clock = FakeClock(T0)
    metrics = SelfMetrics()
    s = Scheduler(PollRunner(metrics, clock), clock, EXACT, metrics.next_poll)
    runs: list[float] = []
    s.every("talking_head", "acme", 21600.0, failing_until(clock, runs, heal_at=30.0))

    def next_poll() -> float | None:
        labels = {"account": "acme", "area": "talking_head"}
        return metrics.registry.get_sample_value("cdnvideo_next_poll_timestamp_seconds", labels)

    assert next_poll() == T0
    await run_due(s)
    assert next_poll() == T0 + 30.0
    clock.set(T0 + 30.0)
    await run_due(s)
    assert next_poll() == T0 + 21600.0
    s.remove_account("acme")
    assert next_poll() is None


async def test_a_housekeeping_call_that_fails_is_retried_like_a_poll() -> None:
    clock = FakeClock(T0)
    s = scheduler(clock)
    runs: list[float] = []

    async def discover() -> bool:
        runs.append(clock.time() - T0)
        return clock.time() - T0 >= 90.0  # the inventory answers from 90 s on

    s.call("discover", 600.0, discover)
    await run_until(s, clock, 600.0)
    assert runs == [0.0, 30.0, 90.0, 600.0]
