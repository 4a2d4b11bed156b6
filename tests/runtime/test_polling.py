"""PollRunner: every poll reports up, last success and duration the same way, and never raises."""

from __future__ import annotations

import asyncio

import pytest
from structlog.contextvars import merge_contextvars
from structlog.testing import capture_logs

from exporter.runtime.polling import PollRunner
from exporter.runtime.selfmetrics import SelfMetrics
from exporter.support.clock import FakeClock
from exporter.upstream import UpstreamError


def runner() -> tuple[PollRunner, SelfMetrics, FakeClock]:
    metrics, clock = SelfMetrics(), FakeClock(1_767_225_600)
    return PollRunner(metrics, clock), metrics, clock


def sample(metrics: SelfMetrics, name: str, **labels: str) -> float | None:
    return metrics.registry.get_sample_value(name, labels)


async def ok() -> None:
    return None


async def fails() -> None:
    raise UpstreamError("dvr", "http", "Stream not found", 404)


async def test_successful_poll_sets_up_last_success_and_duration() -> None:
    r, metrics, clock = runner()
    assert await r.run("dvr", "acme", ok) is True
    assert sample(metrics, "cdnvideo_up", account="acme", area="dvr") == 1
    assert (
        sample(metrics, "cdnvideo_last_success_timestamp_seconds", account="acme", area="dvr")
        == clock.time()
    )
    assert sample(metrics, "cdnvideo_poll_duration_seconds_count", area="dvr") == 1
    assert r.done_once("dvr", "acme")
    assert r.healthy("dvr", "acme") is True


async def test_failing_poll_sets_up_zero_and_keeps_the_last_success() -> None:
    r, metrics, clock = runner()
    await r.run("dvr", "acme", ok)
    first_success = clock.time()
    clock.advance(60)
    with capture_logs(processors=[merge_contextvars]) as logs:
        assert await r.run("dvr", "acme", fails) is False
    assert sample(metrics, "cdnvideo_up", account="acme", area="dvr") == 0
    assert (
        sample(metrics, "cdnvideo_last_success_timestamp_seconds", account="acme", area="dvr")
        == first_success
    )
    assert sample(metrics, "cdnvideo_poll_duration_seconds_count", area="dvr") == 2
    assert r.healthy("dvr", "acme") is False
    assert logs == [
        {
            "event": "poll_failed",
            "log_level": "warning",
            "area": "dvr",
            "account": "acme",
            "error": "UpstreamError: dvr: Stream not found (HTTP 404)",
        }
    ]


@pytest.mark.parametrize("exc", [ValueError("bad"), KeyError("k"), ZeroDivisionError()])
async def test_any_exception_is_reported_not_raised(exc: Exception) -> None:
    async def poll() -> None:
        raise exc

    r, metrics, _ = runner()
    assert await r.run("traffic", "acme", poll) is False
    assert sample(metrics, "cdnvideo_up", account="acme", area="traffic") == 0


async def test_recovery_is_logged_once() -> None:
    r, _, _ = runner()
    with capture_logs(processors=[merge_contextvars]) as logs:
        await r.run("restream", "acme", fails)
        await r.run("restream", "acme", ok)
        await r.run("restream", "acme", ok)
    assert [e["event"] for e in logs] == ["poll_failed", "poll_recovered"]


async def test_areas_and_accounts_are_reported_apart() -> None:
    r, metrics, _ = runner()
    await r.run("dvr", "acme", ok)
    await r.run("dvr", "shop", fails)
    await r.run("talking_head", "acme", fails)
    assert sample(metrics, "cdnvideo_up", account="acme", area="dvr") == 1
    assert sample(metrics, "cdnvideo_up", account="shop", area="dvr") == 0
    assert sample(metrics, "cdnvideo_up", account="acme", area="talking_head") == 0
    assert r.healthy("traffic", "acme") is None
    assert not r.done_once("traffic", "acme")


async def test_duration_is_the_time_the_poll_took() -> None:
    now = [100.0]  # the runner's latency timer, moved only by the poll itself

    async def takes_seven_seconds() -> None:
        now[0] += 7.0

    metrics = SelfMetrics()
    r = PollRunner(metrics, FakeClock(1_767_225_600), timer=lambda: now[0])
    await r.run("traffic", "acme", takes_seven_seconds)
    await r.run("traffic", "acme", fails)  # a failed poll is timed too
    assert sample(metrics, "cdnvideo_poll_duration_seconds_sum", area="traffic") == 7.0
    assert sample(metrics, "cdnvideo_poll_duration_seconds_count", area="traffic") == 2


async def test_cancellation_propagates_and_reports_nothing() -> None:
    started = asyncio.Event()

    async def hangs() -> None:
        started.set()
        await asyncio.sleep(3600)

    r, metrics, _ = runner()
    task = asyncio.create_task(r.run("dvr", "acme", hangs))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert sample(metrics, "cdnvideo_up", account="acme", area="dvr") is None
    assert not r.done_once("dvr", "acme")


async def test_forgotten_account_loses_its_series() -> None:
    r, metrics, _ = runner()
    await r.run("dvr", "acme", ok)
    await r.run("dvr", "shop", ok)
    metrics.forget_account("acme")
    metrics.forget_account("never-seen")
    assert sample(metrics, "cdnvideo_up", account="acme", area="dvr") is None
    assert (
        sample(metrics, "cdnvideo_last_success_timestamp_seconds", account="acme", area="dvr")
        is None
    )
    assert sample(metrics, "cdnvideo_up", account="shop", area="dvr") == 1
