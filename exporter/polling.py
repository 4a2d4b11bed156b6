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
        self._first_done: set[tuple[str, str]] = set()
        self._last_ok: dict[tuple[str, str], bool] = {}

    async def run(self, area: str, account: str, poll: Callable[[], Awaitable[None]]) -> bool:
        """Run one poll; True when it succeeded. Exceptions are reported, never raised
        (cancellation is: a poll cut short at shutdown says nothing about the upstream)."""
        started = time.perf_counter()
        try:
            await poll()
            ok = True
        except Exception as exc:  # a poll must never take the process down
            ok = False
            log.warning(
                "poll_failed",
                area=area,
                account=account,
                error=f"{type(exc).__name__}: {exc}",
            )
        self._metrics.poll_duration.labels(area).observe(time.perf_counter() - started)
        self._metrics.up.labels(account, area).set(1 if ok else 0)
        if ok:
            self._metrics.last_success.labels(account, area).set(self._clock.time())
        key = (area, account)
        if ok and not self._last_ok.get(key, True):
            log.info("poll_recovered", area=area, account=account)
        self._last_ok[key] = ok
        self._first_done.add(key)
        return ok

    def done_once(self, area: str, account: str) -> bool:
        return (area, account) in self._first_done

    def healthy(self, area: str, account: str) -> bool | None:
        """True/False after the first poll, None before it."""
        return self._last_ok.get((area, account))
