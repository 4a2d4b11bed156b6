"""The read policy kept on an account's ledger: how long a window may be asked for now (halved
after a timeout, one minute after a refusal) and when a failing settle read is given up."""

from __future__ import annotations

from collections.abc import Sequence

import structlog

from exporter.areakit.metrics import AreaMetrics
from exporter.traffic.echo import WindowMismatch
from exporter.traffic.ledger import AccountLedger
from exporter.traffic.runs import Run
from exporter.traffic.settings import TrafficSettings
from exporter.traffic.windows import MAX_WINDOW_MINUTES, MINUTE, Window
from exporter.upstream.errors import UpstreamError

log = structlog.get_logger("exporter.traffic")  # in a poll: the account is bound (steps.py)

# After a 504 or a timeout the longest window is halved for this long, then tried in full.
SLOW_HOLD_SECONDS = 3600.0
# A run whose settle reads the platform failed (while it answered other reads of the account)
# at least this often and for at least this long is given up. Postponed reads never count.
SETTLE_ATTEMPTS = 5
SETTLE_GIVE_UP_SECONDS = 6 * 3600.0
SETTLE_BACKOFF_MAX_SECONDS = 900.0
# With settling switched off (``revisit_minutes: 0``) across a restart, the runs counted
# before still owed a settle read get one last read this many minutes after their newest
# first read (the default first age), at once when read at an age already; then they are
# final (remote write is told them), so switching settling off drops nothing owed.
LAST_READ_MINUTES = 5
# Unsettled runs this long past due (settle reads failing) are given up (their late data lost).
GIVE_UP_MINUTES_AT_LEAST = 1440


def slow(exc: UpstreamError) -> bool:
    """The platform gave up on the window ("Request execution timeout exceeded") or we did."""
    return exc.kind == "timeout" or exc.status == 504


def refusal(exc: UpstreamError) -> bool:
    """A long window refused: HTTP 422 (or a 420 not about a rate limit), or HTTP 200
    covering less than was asked."""
    return exc.invalid_parameters or isinstance(exc, WindowMismatch)


def longest(led: AccountLedger, now: float) -> int:
    """The longest window to ask for now, in minutes."""
    if led.long_refused:
        return 1
    if led.slow_cap and now < led.slow_until:
        return led.slow_cap
    return MAX_WINDOW_MINUTES


def cap(minutes: int, each_minute: bool) -> int:
    """The longest run to keep: one minute while an output wants each minute's figures."""
    return 1 if each_minute else minutes


def shrink(led: AccountLedger, w: Window, exc: UpstreamError, now: float) -> None:
    """A window timed out: ask for half as many minutes for the next SLOW_HOLD_SECONDS."""
    led.slow_cap = max(1, w.minutes // 2)
    led.slow_until = now + SLOW_HOLD_SECONDS
    log.warning(
        "traffic_window_halved",
        window=str(w),
        error=exc.message,
        longest_minutes=led.slow_cap,
    )


def refuse_long(led: AccountLedger, w: Window, exc: UpstreamError) -> None:
    """Long windows were refused: one-minute windows from now on."""
    led.long_refused = True
    led.dirty = True
    log.warning(
        "traffic_long_windows_refused",
        window=str(w),
        error=exc.message,
        fallback="1-minute windows",
    )


def give_up(metrics: AreaMetrics, account: str, led: AccountLedger, run: Run, why: str) -> None:
    """Drop ``run`` unsettled (its late data lost), counted as ``given_up``."""
    log.warning("traffic_settle_given_up", window=str(run.window), why=why)
    metrics.traffic_windows.labels(account, "given_up").inc(run.minutes)
    led.drop(run)


def give_up_stale(
    metrics: AreaMetrics,
    account: str,
    led: AccountLedger,
    now: float,
    stages: tuple[int, ...],
    catch_up_minutes: int,
) -> None:
    """Give up the runs a day past due while the platform failed them (or answered nothing of
    the account since they fell due: an outage). A run only postponed (budget, rate limit)
    waits on."""
    late = max(catch_up_minutes, GIVE_UP_MINUTES_AT_LEAST) * MINUTE
    for stale in [
        r
        for r in led.pending
        if now > r.due_at(stages) + late and (r.failed_at or led.answered_at < r.due_at(stages))
    ]:
        give_up(metrics, account, led, stale, "no settle read for a day")


def stages(settings: TrafficSettings, led: AccountLedger) -> tuple[int, ...]:
    """The ages the runs owed are read at: the schedule; with settling off, the schedule the
    runs counted while it was on had (saved with the state file: they finish it, so their
    last read comes when that schedule took their figures to be final), or, for a file that
    does not say it, one last read (``LAST_READ_MINUTES``). Only the schedule decides
    whether a first read keeps a run (``settings.settle_stages``)."""
    return settings.settle_stages or led.schedule or (LAST_READ_MINUTES,)


def reached(led: AccountLedger, now: float, settings: TrafficSettings) -> bool:
    """Whether a run owed has reached the age its next settle read is due at (backing off or
    not): until one has, ``due`` has nothing to give up or return, and is not asked (read on
    the loop, where the poll holds the account)."""
    ages = stages(settings, led)
    return any(now >= run.due_at(ages) for run in led.pending)


def due(
    metrics: AreaMetrics,
    account: str,
    led: AccountLedger,
    now: float,
    settings: TrafficSettings,
    aside: Sequence[Run] = (),
) -> Run | None:
    """The unsettled run to re-read now, if any (not one ``aside``), after giving up the
    hopeless ones (on the worker)."""
    if not led.pending:
        return None
    ages = stages(settings, led)
    led.reschedule(ages)  # the schedule changed since a half was read
    give_up_stale(metrics, account, led, now, ages, settings.catch_up_minutes)
    return led.due(now, ages, aside)


def settle_failed(
    metrics: AreaMetrics,
    account: str,
    led: AccountLedger,
    run: Run,
    now: float,
    ready: float,
    exc: UpstreamError,
) -> None:
    """Back off this run (the runs behind it go first; ``ready``: the clock ``due`` is asked
    on). Give it up once the platform has failed its settle reads for
    SETTLE_GIVE_UP_SECONDS, at least SETTLE_ATTEMPTS times, while it answered other reads of
    the account (an outage does not count)."""
    if led.answered_at > run.failed_at:
        run.failures += 1
        if not run.failing_since:
            run.failing_since = now
    run.failed_at = now
    backoff = min(SETTLE_BACKOFF_MAX_SECONDS, MINUTE * 2.0**run.failures)
    run.retry_at = ready + backoff
    led.dirty = True
    if run.failures >= SETTLE_ATTEMPTS and now - run.failing_since >= SETTLE_GIVE_UP_SECONDS:
        hours = (now - run.failing_since) / 3600
        why = f"settle read failed {run.failures} times over {hours:.1f} h: {exc}"
        give_up(metrics, account, led, run, why)
