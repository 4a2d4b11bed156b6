"""The talking-head read budget of the admin surface: a day's share of the monthly allowance.

The platform allows 1500 talking-head requests a month per account, pollers and people
together. A read token alone must not be able to spend them, so reads through the admin API
that reach the platform are counted per account in a sliding 24 hours
(``admin.talking_head_reads_per_day``, 50 by default: 1500 / 30, divided by
``admin.replicas_per_shard``; each retry counts as a read); one more is refused with
429 and ``Retry-After``. The times of the reads are kept in a small JSON file
(``admin.state_file``) so a restart does not hand out a fresh day's share.
"""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any

import structlog

from exporter.config import Settings
from exporter.support.clock import Clock
from exporter.support.offloop import aside
from exporter.support.ownfiles import read_own
from exporter.traffic.settings import TRAFFIC_SECTION
from exporter.traffic.state import write_atomic
from exporter.web.ratelimit import WindowLimit

log = structlog.get_logger("exporter.admin")

DAY_SECONDS = 86400.0
STATE_VERSION = 1


def state_path(settings: Settings) -> str:
    """``admin.state_file``, or the traffic state file's name + ``.admin``, or "" (memory)."""
    if settings.admin.state_file:
        return settings.admin.state_file
    traffic_state = TRAFFIC_SECTION.of(settings).state_file
    return traffic_state + ".admin" if traffic_state else ""


def _read(path: str) -> dict[str, list[float]]:
    """The read times kept in ``path``; nothing when it is missing or not ours (logged)."""
    try:
        doc: Any = json.loads(read_own(path))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        log.warning("admin_state_unreadable", path=path, error=str(exc), kept="nothing")
        return {}
    reads = doc.get("talking_head_reads") if isinstance(doc, dict) else None
    if not isinstance(reads, dict) or doc.get("version") != STATE_VERSION:
        log.warning("admin_state_unreadable", path=path, error="not version 1", kept="nothing")
        return {}
    return {
        str(account): [float(t) for t in times if isinstance(t, int | float) and math.isfinite(t)]
        for account, times in reads.items()
        if isinstance(times, list)
    }


class ReadBudget:
    """At most ``per_day`` talking-head reads per account in any 24 hours, kept in ``path``."""

    def __init__(self, clock: Clock, per_day: int, path: str = "") -> None:
        self.per_day = per_day
        self.path = path
        self._window = WindowLimit(clock, per_day, DAY_SECONDS)
        if path:
            self._window.restore(_read(path))
        self._saving = asyncio.Lock()

    async def take(self, account: str) -> int:
        """0 when a read may go to the platform (it is counted and saved); otherwise the whole
        seconds until one may."""
        if self.per_day == 0:
            return int(DAY_SECONDS)
        wait = self._window.acquire(account)
        if not wait and self.path:
            await self._save()
        return wait

    async def _save(self) -> None:
        async with self._saving:
            doc = {"version": STATE_VERSION, "talking_head_reads": self._window.snapshot()}
            data = json.dumps(doc, separators=(",", ":")).encode()
            try:
                await aside(write_atomic, self.path, data)
            except OSError as exc:  # the read goes on; the count is kept in memory
                log.warning("admin_state_save_failed", path=self.path, error=str(exc))
