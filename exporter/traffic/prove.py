"""``cdnvideo-exporter audit``: re-read one day's settled windows of an account and print, per
counted key, what the exporter counted, what the platform reports now, and the difference.

Exit status: 0 every key equal, 1 some differ, 2 nothing to compare (an account the config
does not name, no record of that day, a read the platform failed).
"""

from __future__ import annotations

import asyncio
from array import array
from collections.abc import Awaitable, Callable
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TextIO

import aiohttp

from exporter.config import Settings
from exporter.support.clock import Clock, SystemClock
from exporter.traffic.audit import AuditBook, Counted
from exporter.traffic.auditor import audit_path, audit_record, read_totals
from exporter.traffic.parse import COUNT_KEYS, Values
from exporter.traffic.reply import MetricsEndpoint, TrafficSource
from exporter.traffic.settings import TRAFFIC_SECTION
from exporter.upstream import UpstreamClient
from exporter.upstream.budget import Postponed
from exporter.upstream.errors import UpstreamError

DAY = 86_400
WAIT_SECONDS = 5.0  # after the budget or the platform's rate limit made a read wait
WAITS_AT_MOST = 120  # ten minutes of waiting for one window: then the platform is failing


def day_windows(book: AuditBook, account: str, day: date) -> list[Counted]:
    """The settled windows of ``account`` that start on ``day`` (UTC), oldest first."""
    start = int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp())
    a = book.accounts.get(account)
    found = [] if a is None else [c for c in a.counted if start <= c.start < start + DAY]
    return sorted(found, key=lambda c: c.start)


async def compare_day(
    source: TrafficSource,
    account: str,
    windows: list[Counted],
    err: TextIO,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> tuple[Values, Values]:
    """(counted, platform) summed over ``windows``; each window re-read now, progress on
    ``err``. A read postponed by the budget or a rate limit is tried again after WAIT_SECONDS."""
    counted = array("d", [0.0]) * len(COUNT_KEYS)
    platform = array("d", [0.0]) * len(COUNT_KEYS)
    for n, c in enumerate(windows, 1):
        for _ in range(WAITS_AT_MOST):
            try:
                now = await read_totals(source, account, c.window)
                break
            except UpstreamError as exc:
                if not (isinstance(exc, Postponed) or exc.rate_limited):
                    raise
                print(f"[{n}/{len(windows)}] {c.window}: waiting ({exc.message})", file=err)
                await sleep(WAIT_SECONDS)
        else:
            raise UpstreamError("traffic", "budget", f"{c.window}: no read allowed in 10 min")
        same = True
        for i, (mine, theirs) in enumerate(zip(c.totals, now, strict=True)):
            m, t = (mine if mine == mine else 0.0), (theirs if theirs == theirs else 0.0)
            counted[i] += m
            platform[i] += t
            same = same and m == t
        print(f"[{n}/{len(windows)}] {c.window}: {'equal' if same else 'differs'}", file=err)
    return counted, platform


def table(counted: Values, platform: Values) -> list[str]:
    """One line per counted key: counted, platform, platform minus counted."""
    width = max(len(k) for k in COUNT_KEYS)
    lines = [f"{'family':<{width}} {'counted':>20} {'platform':>20} {'difference':>14}"]
    for key, m, t in zip(COUNT_KEYS, counted, platform, strict=True):
        lines.append(f"{key:<{width}} {m:>20.0f} {t:>20.0f} {t - m:>+14.0f}")
    return lines


def load_book(settings: Settings, err: TextIO) -> AuditBook | None:
    """The audit record beside the state file (None, said on ``err``, when there is none)."""
    path = audit_path(TRAFFIC_SECTION.of(settings).state_file)
    if not path:
        print("error: traffic.state_file is empty: there is no record of what was counted",
              file=err)  # fmt: skip
        return None
    book = AuditBook()
    record = audit_record(path)
    if not Path(record.directory).exists() and not Path(path).exists():
        print(f"error: {path} does not exist (the exporter writes it beside the state file)",
              file=err)  # fmt: skip
        return None
    try:
        record.load(book)
    except (OSError, ValueError, KeyError, TypeError, IndexError) as exc:
        print(f"error: {path} cannot be read: {exc}", file=err)
        return None
    return book


def unknown_account(settings: Settings, book: AuditBook, account: str) -> str | None:
    """Why ``account`` is unknown here (None when it is known): not among the config's
    accounts or, where the config discovers them, not in the audit record either."""
    if settings.accounts is not None:
        names = [a.name for a in settings.accounts]
        if account in names:
            return None
        return f"unknown account {account!r}: the config's accounts are {', '.join(names)}"
    if account in book.accounts:
        return None
    held = ", ".join(sorted(book.accounts)) or "none"
    return (
        f"unknown account {account!r}: the config discovers its accounts and the audit "
        f"record holds {held}"
    )


async def prove_day(
    settings: Settings,
    book: AuditBook,
    account: str,
    day: date,
    out: TextIO,
    err: TextIO,
    clock: Clock | None = None,
) -> int:
    """The ``audit`` command (exit status as the module says)."""
    unknown = unknown_account(settings, book, account)
    if unknown is not None:
        print(f"error: {unknown}", file=err)
        return 2
    windows = day_windows(book, account, day)
    if not windows:
        print(f"error: the audit record holds no settled window of {account} on {day} "
              "(it keeps 48 h)", file=err)  # fmt: skip
        return 2
    minutes = sum(c.minutes for c in windows)
    print(f"{account} {day}: re-reading {len(windows)} windows ({minutes} minutes)", file=err)
    async with aiohttp.ClientSession() as session:
        client = UpstreamClient(session, settings.upstream, clock=clock or SystemClock())
        try:
            counted, platform = await compare_day(MetricsEndpoint(client), account, windows, err)
        except UpstreamError as exc:
            print(f"error: {exc.message}", file=err)
            return 2
    for line in table(counted, platform):
        print(line, file=out)
    differs = [k for k, m, t in zip(COUNT_KEYS, counted, platform, strict=True) if m != t]
    verdict = f"differs in {len(differs)} families" if differs else "equal"
    print(f"{account} {day}, {minutes} minutes: {verdict}", file=out)
    return 1 if differs else 0
