"""What writing the audit record costs the event loop, at 25 accounts x 48 h of windows.

``python -m bench.auditrecord [--accounts 25] [--hours 48] [--saves 5]``

Builds the record a daemon holds after 48 h with remote write on (a 1-minute window settled
every minute per account, an audit under way), then, on one event loop with a 1 ms ticker
measuring how late it runs:

- the older whole-file shape: ``AuditBook.to_json`` on the loop, then one ``json.dumps`` of the
  document on the refresh worker (what the exporter did before the record was kept in pieces);
- the pieces (``exporter.traffic.audit_record``): the first save after an upgrade (every
  window written once, from the older file), then ``--saves`` steady saves, each after one more
  window per account, taken on the loop and written on the worker as ``Auditor.step`` does.

For each: the worst lateness of the ticker (the loop's worst stall, wall time: on a loaded
machine it includes being descheduled), the CPU time of the longest single ``json.dumps`` call
(one C call holds the GIL throughout), the wall time of the save, and the bytes on disk.
docs/performance.md (*The audit record*) keeps the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import tempfile
import time
from array import array
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from exporter.support import offloop
from exporter.traffic.audit import AccountAudit, AuditBook, Counted, Outcome
from exporter.traffic.audit_record import AuditRecord
from exporter.traffic.parse import COUNT_KEYS

HOUR = 3600.0


def full_book(accounts: int | Sequence[str], hours: float, now: float) -> AuditBook:
    """``accounts`` (a number, or their names) with a 1-minute window settled every minute for
    ``hours`` up to ``now`` (what remote write's 1-minute runs keep), an audit of 60 minutes
    under way and one done."""
    rng = random.Random(7)
    book = AuditBook()
    names = [f"account-{i:02d}" for i in range(accounts)] if isinstance(accounts, int) else accounts
    for name in names:
        a = book.accounts[name] = AccountAudit()
        first = int(now - hours * HOUR) // 60 * 60
        a.counted = [
            Counted(
                s - 180, s - 120, float(s), array("d", (rng.random() * 1e9 for _ in COUNT_KEYS))
            )
            for s in range(first, int(now), 60)
        ]
        a.sample = a.counted[-120:-60]  # an audit of 60 minutes under way
        a.running = Outcome(now - 60, 3, 1, array("d", [1.0] * len(COUNT_KEYS)))
        a.last = Outcome(now - HOUR, 60, 0, array("d", [0.0] * len(COUNT_KEYS)))
        a.minutes = {"equal": 600, "differs": 5}
        a.due_at = now + HOUR
    return book


@contextmanager
def timed_dumps() -> Iterator[list[float]]:
    """The CPU time of every ``json.dumps`` call meanwhile (any thread): what one call holds
    the GIL for, whatever else the machine runs (wall time would count being descheduled)."""
    durations: list[float] = []
    real = json.dumps

    def dumps(*args: Any, **kwargs: Any) -> str:
        t = time.thread_time()
        out = real(*args, **kwargs)
        durations.append(time.thread_time() - t)
        return out

    json.dumps = dumps  # type: ignore[assignment]
    try:
        yield durations
    finally:
        json.dumps = real


async def worst_lateness(work: Callable[[], Awaitable[None]]) -> tuple[float, float]:
    """(the ticker's worst lateness, seconds the work took) while ``work`` runs."""
    worst = 0.0
    done = False

    async def ticker() -> None:
        nonlocal worst
        while not done:
            t = time.perf_counter()
            await asyncio.sleep(0.001)
            worst = max(worst, time.perf_counter() - t - 0.001)

    tick = asyncio.create_task(ticker())
    await asyncio.sleep(0.01)
    started = time.perf_counter()
    await work()
    took = time.perf_counter() - started
    done = True
    await tick
    return worst, took


def size_of(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


async def measure(
    accounts: int, hours: float, saves: int
) -> list[tuple[str, float, float, float, int]]:
    now = 1_767_225_600.0 + hours * HOUR
    book = full_book(accounts, hours, now)
    rows: list[tuple[str, float, float, float, int]] = []
    loop = asyncio.get_running_loop()
    with tempfile.TemporaryDirectory() as tmp:
        legacy = Path(tmp) / "traffic.json.audit.json"

        async def whole() -> None:
            doc = book.to_json()  # on the loop, as the exporter did
            data = await loop.run_in_executor(offloop.WORKER, json.dumps, doc)
            await loop.run_in_executor(offloop.WORKER, legacy.write_text, data)

        with timed_dumps() as d:
            worst, took = await worst_lateness(whole)
        rows.append(("whole file (before)", worst, max(d), took, legacy.stat().st_size))

        record = AuditRecord(str(Path(tmp) / "traffic.json.audit"), str(legacy))
        book = AuditBook()
        record.load(book)  # reads the older file: the first save writes every window

        async def save() -> None:
            pieces = record.take(book)  # on the loop, as Auditor.step
            await loop.run_in_executor(offloop.WORKER, record.write, pieces, now, 48 * HOUR)

        with timed_dumps() as d:
            worst, took = await worst_lateness(save)
        folder = Path(record.directory)
        rows.append(("pieces, first save (upgrade)", worst, max(d), took, size_of(folder)))
        for _ in range(saves):
            now += 60
            for name, a in book.accounts.items():
                c = Counted(
                    int(now) - 180, int(now) - 120, now, array("d", [5.0] * len(COUNT_KEYS))
                )
                a.counted.append(c)
                record.settled(name, c)
            with timed_dumps() as d:
                worst, took = await worst_lateness(save)
            rows.append(("pieces, a minute's save", worst, max(d), took, size_of(folder)))
    return rows


def main() -> None:
    p = argparse.ArgumentParser(
        prog="python -m bench.auditrecord", description=__doc__.split("\n\n")[0]
    )
    p.add_argument("--accounts", type=int, default=25)
    p.add_argument("--hours", type=float, default=48.0)
    p.add_argument("--saves", type=int, default=5)
    args = p.parse_args()
    rows = asyncio.run(measure(args.accounts, args.hours, args.saves))
    print(f"audit record, {args.accounts} accounts x {args.hours:g} h of 1-minute windows")
    print(f"{'shape':<30} {'worst stall':>12} {'largest dumps':>14} {'took':>8} {'on disk':>12}")
    for name, worst, largest, took, size in rows:
        stall, dumps = f"{worst * 1000:>9.1f} ms", f"{largest * 1000:>11.1f} ms"
        print(f"{name:<30} {stall} {dumps} {took:>6.2f} s {size:>12,}")


if __name__ == "__main__":
    main()
