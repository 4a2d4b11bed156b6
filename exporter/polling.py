"""One wrapper for every poll: timing, cdnvideo_up, last success, and a log line on failure."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

import structlog

from exporter.clock import Clock
from exporter.selfmetrics import SelfMetrics

log = structlog.get_logger("exporter.polling")


class PollRunner:
    """Runs a poll of (area, account), reporting success and duration the same way for all."""

    def __init__(self, metrics: SelfMetrics, clock: Clock) -> None:
        self._metrics = metrics
        self._clock = clock
        # Last outcome per (area, account, job): an area with two jobs (restream status and
        # history) is up only while both are; one succeeding does not hide the other failing.
        self._jobs: dict[tuple[str, str], dict[str, bool]] = {}

    async def run(
        self, area: str, account: str, poll: Callable[[], Awaitable[None]], job: str = ""
    ) -> bool:
        """Run one poll; True when it succeeded. Exceptions are reported, never raised
        (cancellation is: a poll cut short at shutdown says nothing about the upstream)."""
        started = time.perf_counter()
        try:
            await poll()
            ok = True
        except Exception as exc:  # a poll must never take the process down
            ok = False
            where = {"job": job} if job else {}
            log.warning(
                "poll_failed",
                area=area,
                account=account,
                error=f"{type(exc).__name__}: {exc}",
                **where,
            )
        self._metrics.poll_duration.labels(area).observe(time.perf_counter() - started)
        key = (area, account)
        jobs = self._jobs.setdefault(key, {})
        was_healthy = all(jobs.values()) if jobs else True
        jobs[job] = ok
        healthy = all(jobs.values())
        self._metrics.up.labels(account, area).set(1 if healthy else 0)
        if healthy:
            self._metrics.last_success.labels(account, area).set(self._clock.time())
        if healthy and not was_healthy:
            log.info("poll_recovered", area=area, account=account)
        return ok

    def done_once(self, area: str, account: str) -> bool:
        return (area, account) in self._jobs

    def healthy(self, area: str, account: str) -> bool | None:
        """True/False after the first poll, None before it."""
        jobs = self._jobs.get((area, account))
        return None if jobs is None else all(jobs.values())

    def forget(self, account: str) -> None:
        """Drop the state of an account this replica no longer serves."""
        for key in [k for k in self._jobs if k[1] == account]:
            del self._jobs[key]
