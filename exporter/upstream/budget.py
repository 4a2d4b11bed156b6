"""The request budget of each account, shared by all areas, and backing off on rate limits."""

from __future__ import annotations

import bisect
import math
from collections import deque
from dataclasses import dataclass, field

import structlog

from exporter.support.clock import Clock
from exporter.upstream.errors import UpstreamError
from exporter.upstream.metrics import BudgetMetrics

log = structlog.get_logger("exporter.upstream.budget")

# Areas whose reads come first: traffic counts every minute exactly (first reads, settle reads
# and backfill alike), and the token endpoint has its own limit.
PRIORITY_AREAS = frozenset({"traffic", "auth"})
# Share of each bucket the other areas leave to the priority areas, and at least this many
# requests: a traffic read is a pair (totals, per resource) sent only when both fit.
RESERVE_FRACTION = 0.25
RESERVE_AT_LEAST = 2.0
# Pause after a rate-limit signal without Retry-After.
DEFAULT_PAUSE_SECONDS = 30.0
# After the pause the allowance starts at half the requests of the last minute and grows by
# this factor every RECOVERY_STEP_SECONDS without another signal, until it is back.
RECOVERY_FACTOR = 1.5
RECOVERY_STEP_SECONDS = 60.0
# One log line per (event, account, area) per this many seconds.
LOG_EVERY_SECONDS = 60.0


class Postponed(UpstreamError):
    """Not sent: the account's budget is spent, or (``paused``) it is backing off after the
    platform's rate limit."""

    paused: bool = False


@dataclass
class _Bucket:
    """One account's state, its times on the monotonic clock (a step of the wall clock never
    makes old requests look recent, nor a pause last longer). Only the event loop changes it;
    the gauges read it from the render thread, so reading never changes anything."""

    sent: deque[float] = field(default_factory=deque)  # send times of the last 60 s
    paused_until: float = 0.0
    allowance: float | None = None  # requests a minute when the pause ends; None = normal
    restore_at: float = math.inf  # allowance at which recovery is complete

    def allowance_at(self, now: float) -> float | None:
        """The recovering allowance at ``now`` (grown once per step since the pause ended)."""
        if self.allowance is None:
            return None
        steps = max(0, math.floor((now - self.paused_until) / RECOVERY_STEP_SECONDS))
        grown = self.allowance * RECOVERY_FACTOR**steps
        return None if grown >= self.restore_at else grown

    def count(self, now: float) -> int:
        """Requests sent in the 60 seconds before ``now``."""
        sent = list(self.sent)  # one C call: a consistent copy while the loop appends
        return len(sent) - bisect.bisect_right(sent, now - 60.0)


def _usable(limit: float, area: str) -> float:
    """Of ``limit`` requests a minute, what ``area`` may use: all of it for traffic and auth,
    the rest leaving them their reserve."""
    reserve = max(RESERVE_AT_LEAST, limit * RESERVE_FRACTION)
    return limit if area in PRIORITY_AREAS else max(1.0, limit - reserve)


class RequestBudget:
    """``upstream.max_requests_per_minute`` per account (0 = no limit), shared by every area.

    The bucket of an account is its requests of the last 60 seconds: a request may go while
    fewer than the allowance were sent in that window, so no 60 seconds ever hold more (a
    classic token bucket would allow its capacity plus a minute's refill within one minute,
    and the platform's limits are "N a minute"). Traffic and auth may use all of it; the other
    areas leave RESERVE_FRACTION to them, at least RESERVE_AT_LEAST (a traffic read's pair).
    A rate-limit signal from the platform (429, 420 or a 200 "Rate limit exceeded" body)
    pauses the account for Retry-After (DEFAULT_PAUSE_SECONDS without one), then lets it send
    half of what it sent in the minute before, growing by half again every minute until the
    normal allowance is back; this also applies without a configured limit.
    """

    def __init__(self, per_minute: int, clock: Clock, metrics: BudgetMetrics | None = None) -> None:
        self.per_minute = per_minute
        self._clock = clock
        self._metrics = metrics
        self._buckets: dict[str, _Bucket] = {}
        self._logged: dict[tuple[str, str, str], float] = {}

    # --- reading -----------------------------------------------------------------------------
    def limit(self, account: str) -> float | None:
        """Requests a minute the account may send now; None for no limit, 0 while paused."""
        b = self._buckets.get(account)
        configured = float(self.per_minute) if self.per_minute else None
        if b is None:
            return configured
        now = self._clock.monotonic()
        if now < b.paused_until:
            return 0.0
        limits = [x for x in (b.allowance_at(now), configured) if x is not None]
        return min(limits) if limits else None

    def paused(self, account: str) -> bool:
        """Whether the account is backing off after a rate-limit answer of the platform."""
        b = self._buckets.get(account)
        return b is not None and self._clock.monotonic() < b.paused_until

    def in_use(self, account: str) -> int:
        """Requests sent for the account in the last 60 seconds."""
        b = self._buckets.get(account)
        return 0 if b is None else b.count(self._clock.monotonic())

    def affords(self, account: str, area: str, count: int) -> bool:
        """Whether ``count`` requests of ``area`` could go now (a poll asks before it starts;
        a poll larger than the allowance may start when the window is empty)."""
        limit = self.limit(account)
        if limit is None:
            return True
        if limit <= 0:
            return False
        usable = _usable(limit, area)
        return self.in_use(account) + min(float(count), usable) <= usable

    def frees_in(self, account: str, area: str, count: int) -> float | None:
        """Seconds until ``affords(account, area, count)`` holds if nothing more is sent: 0
        when it does now; None while paused by the platform's limit (its own retry decides).
        A poll the budget held back runs again at that instant, not at its next tick: the
        last 60 s hold the allowance exactly, never the allowance less what a tick wasted."""
        limit = self.limit(account)
        if limit is None:
            return 0.0
        if limit <= 0:
            return None
        usable = _usable(limit, area)
        room = math.floor(usable - min(float(count), usable))  # sends that may stay in window
        b = self._buckets.get(account)
        now = self._clock.monotonic()
        if b is None:
            return 0.0
        sent = list(b.sent)
        recent = sent[bisect.bisect_right(sent, now - 60.0) :]
        if len(recent) <= room:
            return 0.0
        return recent[len(recent) - room - 1] + 60.0 - now + 0.001  # past the edge

    # --- spending ----------------------------------------------------------------------------
    def take(self, account: str, area: str) -> None:
        """Spend one request, or raise Postponed (nothing is spent)."""
        if not self.affords(account, area, 1):
            self.postpone(account, area)
        self._spend(account)

    def spend(self, account: str) -> None:
        """Spend one request whatever the balance (the admin surface: a person is waiting)."""
        self._spend(account)

    def postpone(self, account: str, area: str) -> None:
        """Raise Postponed for a request or poll of ``area`` the budget cannot afford now."""
        b = self._bucket(account)
        now = self._clock.monotonic()
        paused = now < b.paused_until
        why = "backing off after a rate limit" if paused else "budget spent"
        exc = Postponed(area, "budget", f"request budget of {account!r}: {why}; postponed")
        exc.paused = paused
        raise exc

    def signal(self, account: str, area: str, retry_after: float | None) -> None:
        """The platform said slow down: pause the account, then recover gradually."""
        if self._metrics is not None:
            self._metrics.rate_limited.labels(area).inc()
        if not account:
            return
        b = self._bucket(account)
        now = self._clock.monotonic()
        self._trim(b, now)
        current = b.allowance_at(now) if now >= b.paused_until else b.allowance
        pause = DEFAULT_PAUSE_SECONDS if retry_after is None else max(0.0, retry_after)
        b.paused_until = max(b.paused_until, now + pause)
        recent = max(1.0, float(len(b.sent)))
        b.allowance = max(1.0, recent / 2)
        if self.per_minute:
            b.allowance = min(b.allowance, float(self.per_minute))
        if current is not None:  # signalled again while recovering: never above the last
            b.allowance = min(b.allowance, current)
        b.restore_at = float(self.per_minute) if self.per_minute else recent * 2
        self.watch(account)
        self.log_once(
            "upstream_rate_limited",
            account,
            area,
            pause_seconds=round(pause, 1),
            allowance_per_minute=round(b.allowance, 1),
        )

    def log_once(self, event: str, account: str, area: str, **extra: object) -> None:
        """A warning line, at most one per (event, account, area) per LOG_EVERY_SECONDS."""
        now = self._clock.monotonic()
        key = (event, account, area)
        if now - self._logged.get(key, -math.inf) < LOG_EVERY_SECONDS:
            return
        self._logged[key] = now
        log.warning(event, account=account, area=area, **extra)

    def watch(self, account: str) -> None:
        """Expose the account's budget gauges (read at scrape time)."""
        if self._metrics is None or not account:
            return
        self._metrics.budget_in_use.labels(account).set_function(lambda: self.in_use(account))
        self._metrics.budget_limit.labels(account).set_function(lambda: self._shown_limit(account))

    def _shown_limit(self, account: str) -> float:
        """The allowance for the gauge: 0 for no limit (as in the config); while paused, the
        allowance the account resumes at (the pause shows in the rate-limited counter)."""
        configured = float(self.per_minute) if self.per_minute else None
        b = self._buckets.get(account)
        now = self._clock.monotonic()
        allowance = None if b is None else b.allowance_at(max(now, b.paused_until))
        limits = [x for x in (allowance, configured) if x is not None]
        return min(limits) if limits else 0.0

    def accounts(self) -> list[str]:
        """The accounts a bucket is kept for (diagnostics and tests)."""
        return sorted(self._buckets)

    def forget(self, account: str) -> None:
        self._buckets.pop(account, None)
        self._logged = {k: v for k, v in self._logged.items() if k[1] != account}

    # --- internals ---------------------------------------------------------------------------
    def _bucket(self, account: str) -> _Bucket:
        """The account's state, made (and its gauges exposed) on first use; loop only."""
        b = self._buckets.get(account)
        if b is None:
            b = self._buckets[account] = _Bucket()
            self.watch(account)
        return b

    def _spend(self, account: str) -> None:
        b = self._bucket(account)
        now = self._clock.monotonic()
        b.sent.append(now)
        self._trim(b, now)

    @staticmethod
    def _trim(b: _Bucket, now: float) -> None:
        while b.sent and b.sent[0] <= now - 60.0:
            b.sent.popleft()
