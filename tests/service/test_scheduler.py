"""The scheduler runs polls through the PollRunner and stops quietly, mid-poll included."""

from __future__ import annotations

import asyncio
import logging

import pytest
from structlog.testing import capture_logs

from exporter.runtime.polling import PollRunner
from exporter.runtime.scheduler import Scheduler
from exporter.runtime.selfmetrics import SelfMetrics
from exporter.support.clock import FakeClock


async def test_a_poll_cut_short_by_shutdown_is_logged_once_as_info_not_as_a_job_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    started = asyncio.Event()
    finished: list[str] = []

    async def slow_poll() -> None:
        started.set()
        await asyncio.sleep(60)
        finished.append("never")

    metrics = SelfMetrics()
    scheduler = Scheduler(PollRunner(metrics, FakeClock()))
    scheduler.every("traffic", "acme", 15.0, slow_poll, first_within=0.0)
    caplog.set_level(logging.INFO, logger="apscheduler")
    with capture_logs() as events:
        scheduler.start()
        await asyncio.wait_for(started.wait(), 5.0)
        scheduler.shutdown()
        for _ in range(20):  # let the cancelled job unwind
            await asyncio.sleep(0)
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == [], [r.getMessage() for r in errors]
    cancelled = [e for e in events if e["event"] == "poll_cancelled"]
    assert cancelled == [
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
        await asyncio.sleep(60)

    scheduler = Scheduler(PollRunner(SelfMetrics(), FakeClock()))
    scheduler.call("discover", 600.0, slow_discovery)
    caplog.set_level(logging.INFO, logger="apscheduler")
    with capture_logs() as events:
        scheduler.start()
        await asyncio.wait_for(started.wait(), 5.0)
        scheduler.shutdown()
        for _ in range(20):
            await asyncio.sleep(0)
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == [], [r.getMessage() for r in errors]
    cancelled = [e for e in events if e["event"] == "poll_cancelled"]
    assert cancelled == [{"event": "poll_cancelled", "log_level": "info", "job": "discover"}]
