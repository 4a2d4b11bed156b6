"""One wrapper for every poll: timing, cdnvideo_up, last success, and a log line on failure."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Awaitable, Callable

import structlog
from structlog.contextvars import bound_contextvars

from exporter.areakit import NothingToWatch
from exporter.runtime.selfmetrics import SelfMetrics
from exporter.support.clock import Clock
from exporter.upstream.budget import Postponed
from exporter.upstream.errors import UpstreamError

# One poll_postponed line per (area, account) per this many seconds.
POSTPONED_LOG_SECONDS = 60.0

log = structlog.get_logger("exporter.runtime.polling")


class PollRunner:
    """Runs a poll of (area, account), reporting success and duration the same way for all."""

    def __init__(
        self,
        metrics: SelfMetrics,
        clock: Clock,
        timer: Callable[[], float] = time.perf_counter,
        mask: Callable[[str], str] = lambda text: text,
    ) -> None:
        self._metrics = metrics
        self._clock = clock
        self._timer = timer  # times each poll for cdnvideo_poll_duration_seconds
        self._mask = mask  # the log redactor's: a reason is shown to people, secrets masked
        # (area, account) -> job -> why its last run failed (masked), the latest failure last;
        # a job's entry goes when it succeeds.
        self._errors: dict[tuple[str, str], dict[str, str]] = {}
        # Last outcome per (area, account, job): an area with two jobs (restream status and
        # history) is up only while both are; one succeeding does not hide the other failing.
        self._jobs: dict[tuple[str, str], dict[str, bool]] = {}
        self._postponed_logged: dict[tuple[str, str], float] = {}
        # (area, account) -> what the platform said when it did not know the account.
        self._unknown: dict[tuple[str, str], str] = {}
        # (area, account) that succeeded at least once since the start (readiness).
        self._succeeded: set[tuple[str, str]] = set()
        # (area, account) -> what to configure, for an area with nothing to watch there.
        self._unconfigured: dict[tuple[str, str], str] = {}
        # The accounts the platform refused access to with a good token (the client's
        # ``no_access``); build_context wires it.
        self.no_access: Callable[[str], bool] = lambda account: True

    async def run(
        self, area: str, account: str, poll: Callable[[], Awaitable[None]], job: str = ""
    ) -> bool:
        """Run one poll; True when it succeeded. Exceptions are reported, never raised
        (cancellation is: a poll cut short at shutdown says nothing about the upstream)."""
        started = self._timer()
        failure: Exception | None = None
        try:
            await poll()
        except Exception as exc:  # a poll must never take the process down
            failure = exc
        # the report's lines name the area and the account (see support.logs)
        with bound_contextvars(area=area, account=account):
            return self._report(area, account, job, started, failure)

    def _report(
        self, area: str, account: str, job: str, started: float, failure: Exception | None
    ) -> bool:
        """Count the poll's outcome and log what changed; True when it succeeded."""
        if isinstance(failure, Postponed):
            # Not run for want of budget: counted, and cdnvideo_up keeps what it said.
            self._postponed(area, account, job, failure)
            return False
        if isinstance(failure, NothingToWatch):
            self._nothing_to_watch(area, account, failure.what)
            return True  # nothing failed: no retry
        ok = failure is None
        if failure is not None:
            where = {"job": job} if job else {}
            reason = unknown_account(failure, self.no_access(account))
            if reason is not None:
                self._unknown_account(area, account, reason)
            else:
                log.warning("poll_failed", error=f"{type(failure).__name__}: {failure}", **where)
        self._metrics.poll_duration.labels(area).observe(self._timer() - started)
        key = (area, account)
        if self._unconfigured.pop(key, None) is not None:
            log.info("area_configured")
        jobs = self._jobs.setdefault(key, {})
        was_healthy = all(jobs.values()) if jobs else True
        jobs[job] = ok
        errors = self._errors.setdefault(key, {})
        errors.pop(job, None)
        if failure is not None:
            errors[job] = self._mask(failure_reason(failure))
        healthy = all(jobs.values())
        self._metrics.up.labels(account, area).set(1 if healthy else 0)
        if healthy:
            self._metrics.last_success.labels(account, area).set(self._clock.time())
            self._succeeded.add(key)
        if healthy and not was_healthy:
            log.info("poll_recovered")
        if ok:
            self._unknown.pop(key, None)
        return ok

    def _unknown_account(self, area: str, account: str, reason: str) -> None:
        """One warning when the platform first says it does not know ``account``."""
        if not any(a == account for _, a in self._unknown):
            # given here too: this line has always named the account before the area
            log.warning("account_unknown", account=account, area=area, reply=reason)
        self._unknown[(area, account)] = reason

    def _nothing_to_watch(self, area: str, account: str, what: str) -> None:
        """The area is "not configured" for the account: no cdnvideo_up (nor last success)
        series, and no outcome, rather than an "up" that watched nothing."""
        key = (area, account)
        if key not in self._unconfigured:
            log.info("area_not_configured", what=what)
        self._unconfigured[key] = what
        self._jobs.pop(key, None)
        self._errors.pop(key, None)
        for gauge in (self._metrics.up, self._metrics.last_success):
            with contextlib.suppress(KeyError):
                gauge.remove(account, area)

    def not_configured(self, area: str, account: str) -> str | None:
        """What to configure when ``area`` has nothing to watch for ``account`` (else None)."""
        return self._unconfigured.get((area, account))

    def unknown(self, account: str) -> str | None:
        """What the platform said when it last refused to know ``account`` (None: it knows)."""
        return next((why for (_, a), why in sorted(self._unknown.items()) if a == account), None)

    def _postponed(self, area: str, account: str, job: str, exc: Postponed) -> None:
        self._metrics.polls_postponed.labels(area).inc()
        now = self._clock.time()
        key = (area, account)
        if now - self._postponed_logged.get(key, float("-inf")) >= POSTPONED_LOG_SECONDS:
            self._postponed_logged[key] = now
            where = {"job": job} if job else {}
            log.warning("poll_postponed", reason=exc.message, **where)

    def last_error(self, area: str, account: str) -> str | None:
        """Why the latest failing run of ``area`` for ``account`` failed, in the platform's
        words with secrets masked (``Invalid token (HTTP 403)``); None while every job's
        last run succeeded."""
        errors = self._errors.get((area, account))
        return next(reversed(errors.values()), None) if errors else None

    def done_once(self, area: str, account: str) -> bool:
        return (area, account) in self._jobs

    def healthy(self, area: str, account: str) -> bool | None:
        """True/False after the first poll, None before it."""
        jobs = self._jobs.get((area, account))
        return None if jobs is None else all(jobs.values())

    def succeeded_once(self, area: str, account: str) -> bool:
        """Whether a poll of ``area`` for ``account`` has succeeded since the start."""
        return (area, account) in self._succeeded

    def forget(self, account: str) -> None:
        """Drop the state of an account this replica no longer serves."""
        self._succeeded = {k for k in self._succeeded if k[1] != account}
        for key in [k for k in self._jobs if k[1] == account]:
            del self._jobs[key]
        for key in [k for k in self._errors if k[1] == account]:
            del self._errors[key]
        for key in [k for k in self._postponed_logged if k[1] == account]:
            del self._postponed_logged[key]
        for key in [k for k in self._unknown if k[1] == account]:
            del self._unknown[key]
        for key in [k for k in self._unconfigured if k[1] == account]:
            del self._unconfigured[key]


def failure_reason(exc: BaseException) -> str:
    """A failed poll's cause as a person reads it: a platform error as its message and status
    (``Invalid token or no access (HTTP 403)``, ``GET /app/... failed: DNS lookup of HOST
    failed (...)``), an error of the exporter's own as its text, a built-in exception (a bug)
    with its class."""
    if isinstance(exc, UpstreamError):
        return exc.message + (f" (HTTP {exc.status})" if exc.status else "")
    text = str(exc)
    if text and type(exc).__module__ != "builtins":
        return text
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


_UNKNOWN_WORDS = ("account", "client")  # "Account not found", "Client not found", "Invalid account"


def unknown_account(exc: BaseException, no_access: bool) -> str | None:
    """The platform's words when ``exc`` says it does not know the account: a 404 about the
    account or restream client, or the metrics area's 403 "Invalid token or no access" when
    the client found the token good (``no_access``: ``UpstreamClient.no_access``)."""
    if not isinstance(exc, UpstreamError):
        return None
    text = exc.message.lower()
    if exc.status == 404 and any(word in text for word in _UNKNOWN_WORDS):
        return f"{exc.area}: {exc.message} (HTTP 404)"
    if exc.status == 403 and "no access" in text and no_access:
        return f"{exc.area}: {exc.message} (HTTP 403)"
    return None
