"""One scheduling mechanism for every area: APScheduler 3 interval jobs, jittered, no overlap."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

import structlog
from apscheduler.schedulers.asyncio import AsyncIOScheduler

from exporter.config import stable_hash
from exporter.runtime.polling import PollRunner

log = structlog.get_logger("exporter.runtime.scheduler")


class JobKey(NamedTuple):
    """One scheduled poll: its area, its account and the job's name within the area."""

    area: str
    account: str
    job: str = ""

    def __str__(self) -> str:
        """The APScheduler job id (nothing reads it back)."""
        return f"{self.area}/{self.account}/{self.job}"


class Scheduler:
    """Runs each (area, account) poll on its own interval through the PollRunner.

    Jobs use ``max_instances=1`` (a slow poll is never run twice at once) and ``coalesce``
    (missed runs collapse into one). The first run of each job is spread over the first
    interval by a stable per-account offset, and every run gets random jitter, so accounts
    do not hit the API in the same second.
    """

    def __init__(self, runner: PollRunner) -> None:
        self._runner = runner
        self._scheduler = AsyncIOScheduler(timezone=UTC)
        self._jobs: set[JobKey] = set()

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
        jitter = max(0.0, min(seconds * 0.1, 5.0))

        async def run() -> None:
            await self._runner.run(area, account, poll, job)

        where = {"job": job} if job else {}
        self._scheduler.add_job(
            _quiet_at_shutdown(run, area=area, account=account, **where),
            "interval",
            seconds=seconds,
            jitter=jitter,
            id=str(key),
            replace_existing=True,
            max_instances=1,
            coalesce=True,
            misfire_grace_time=max(1, int(seconds)),
            next_run_time=datetime.now(UTC) + timedelta(seconds=offset + random.random() * 0.2),
        )
        self._jobs.add(key)

    def call(
        self, name: str, seconds: float, func: Callable[[], Awaitable[None]], first: float = 0.0
    ) -> None:
        """A housekeeping job outside the area/account scheme (account discovery)."""
        self._scheduler.add_job(
            _quiet_at_shutdown(func, job=name),
            "interval",
            seconds=seconds,
            id=name,
            replace_existing=True,
            max_instances=1,
            coalesce=True,
            next_run_time=datetime.now(UTC) + timedelta(seconds=first),
        )

    def jobs(self) -> list[JobKey]:
        """The area/account jobs scheduled now, sorted."""
        return sorted(self._jobs)

    def remove_account(self, account: str) -> None:
        for key in [k for k in self._jobs if k.account == account]:
            self._scheduler.remove_job(str(key))
            self._jobs.discard(key)

    def start(self) -> None:
        self._scheduler.start()

    def shutdown(self) -> None:
        if self._scheduler.running:
            self._scheduler.shutdown(wait=False)


def _quiet_at_shutdown(
    func: Callable[[], Awaitable[None]], **where: str
) -> Callable[[], Awaitable[None]]:
    """``func`` as a job that ends with one info line when shutdown cancels it.

    Only shutdown cancels a running job. APScheduler would log that as a job error with a
    traceback on every restart; it is expected. The job's task ends here (nothing awaits it),
    so the cancellation is not passed on.
    """

    async def job() -> None:
        try:
            await func()
        except asyncio.CancelledError:
            log.info("poll_cancelled", **where)

    return job
