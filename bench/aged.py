"""The files a daemon keeps beside its traffic state file as they are after ``hours`` of running,
written with the exporter's own writers (``python -m bench --aged-hours 48``).

For each account the daemon serves (its resources as the simulator names them):

- the state file and its cursor file (``state.dump``, ``state_lost.dump_cursors``): a series per
  resource with what it counted, the runs still owed a settle read (one per minute, as with
  remote write on), the lateness each settle age measured; the cursor at the newest minute
  the default delay has made ready;
- the audit record (``AuditRecord.write``): a 1-minute window settled every minute for
  ``hours`` (at most its 48 h of keeping), an audit under way, one done;
- the remote-write store (``MinuteStore.offer``, the bodies made as ``RemoteWriter.final``
  makes them): the last ``down_minutes`` final minutes pending (the receiver down that long),
  the minutes before them acknowledged in ``written.json`` as far back as it keeps them;
- the charts file (``history_file.dumps``): the last hour of points.

``sizes`` reads back the size of every file the daemon keeps, by kind.
"""

from __future__ import annotations

import random
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.auditrecord import full_book
from exporter.remotewrite.build import store_dir
from exporter.remotewrite.samples import FinalRun, minute_series
from exporter.remotewrite.settings import DEFAULT_MAX_AGE_MINUTES
from exporter.remotewrite.store import MinuteStore
from exporter.remotewrite.wire import encode
from exporter.simulator.dataset import CdnResource
from exporter.traffic import history_file, state, state_lost
from exporter.traffic.audit_record import AuditRecord, record_dir
from exporter.traffic.counters import Late, Series
from exporter.traffic.history import Point
from exporter.traffic.ledger import AccountLedger
from exporter.traffic.parse import COUNT_KEYS, Values
from exporter.traffic.runs import Run

MINUTE = 60
DELAY_SECONDS = 120  # traffic.delay_seconds at its default
STAGES = (5,)  # traffic.revisit_minutes at its default
DOWN_MINUTES = 60  # the receiver down this long: its final minutes pending

# Digits of a resource's count over 48 h, by key: bytes around 1e12, requests 1e6, the
# rarer status codes fewer (a few are 0); what a minute adds is 1/2880 of it.
_DIGITS = {"bytes": 12, "requests_total": 7, "_200": 7, "_2xx": 7}


@dataclass(frozen=True)
class Account:
    """An account the daemon serves and its CDN resources (``exporter.simulator.dataset``)."""

    name: str
    resources: tuple[CdnResource, ...]


def _counts(rng: random.Random, scale: float) -> Values:
    """Whole counts of every COUNT_KEYS key (the platform sends whole numbers)."""
    out = array("d")
    for key in COUNT_KEYS:
        digits = next((d for k, d in _DIGITS.items() if key.endswith(k)), 4)
        out.append(float(int(rng.randrange(10**digits) * scale)))
    return out


def newest_ready(now: float) -> int:
    """The start of the newest minute the default delay has made ready at ``now``."""
    return int(now - DELAY_SECONDS) // MINUTE * MINUTE - MINUTE


def ledger(account: Account, hours: float, now: float, rng: random.Random) -> AccountLedger:
    led = AccountLedger()
    cursor = newest_ready(now)
    led.cursor = cursor
    led.schedule = STAGES
    share = min(1.0, hours / 48)
    led.totals = _counts(rng, len(account.resources) * share)
    for r in account.resources:
        led.series[r.id] = Series(r.name, r.cname, _counts(rng, share), now - 60)
    for start in range(cursor - (STAGES[-1] - 1) * MINUTE, cursor + MINUTE, MINUTE):
        read_at = start + MINUTE + DELAY_SECONDS + 1.0
        resources = {r.id: _counts(rng, 1 / 2880) for r in account.resources}
        totals = _counts(rng, len(account.resources) / 2880)
        led.pending.append(Run(start, start + MINUTE, read_at, totals, resources))
    led.late = {STAGES[-1]: Late(float(rng.randrange(10**6)), float(rng.randrange(10**9)), 0.01)}
    led.late_share = 0.01
    led.last_stage_share = 0.01
    return led


def _state(path: str, accounts: Sequence[Account], hours: float, now: float) -> None:
    rng = random.Random(11)
    ledgers = {a.name: ledger(a, hours, now, rng) for a in accounts}
    state.write_atomic(path, state.dump(ledgers, now))
    state.write_atomic(state_lost.cursors_path(path), state_lost.dump_cursors(ledgers, now))


def _audit(path: str, accounts: Sequence[Account], hours: float, now: float) -> None:
    book = full_book([a.name for a in accounts], min(hours, 48.0), now)
    record = AuditRecord(record_dir(path))
    for name, a in book.accounts.items():
        for counted in a.counted:
            record.settled(name, counted)
    record.write(record.take(book), now, book.policy.keep_seconds)


def last_final(now: float) -> int:
    """The newest minute whose last settle read is done at ``now``."""
    return newest_ready(now) - STAGES[-1] * MINUTE


def _remote_write(path: str, accounts: Sequence[Account], hours: float, now: float) -> None:
    """The minutes the receiver has not acknowledged (the last ``DOWN_MINUTES``, or all of
    ``hours`` when shorter), each a body as ``RemoteWriter.final`` makes it; the minutes
    acknowledged before them, as far back as the store keeps them."""
    rng = random.Random(13)
    newest = last_final(now)
    down = min(DOWN_MINUTES, int(hours * 60))
    first_pending = newest - (down - 1) * MINUTE
    max_age = DEFAULT_MAX_AGE_MINUTES * 60.0
    oldest_kept = now - max_age - 3600
    first_written = max(oldest_kept, newest - hours * 3600 + MINUTE)
    store = MinuteStore(store_dir(path), max_age)
    for a in accounts:
        for minute in range(first_pending, newest + MINUTE, MINUTE):
            totals = dict(zip(COUNT_KEYS, _counts(rng, len(a.resources) / 2880), strict=True))
            resources = {
                r.id: dict(zip(COUNT_KEYS, _counts(rng, 1 / 2880), strict=True))
                for r in a.resources
            }
            run = FinalRun(a.name, minute, minute + MINUTE, totals, resources)
            bodies = {m: encode(s) for m, s in minute_series(run, lambda _: True).items() if s}
            store.offer(a.name, bodies)
    written = range(int(first_written) // MINUTE * MINUTE, first_pending, MINUTE)
    if written:
        # the acknowledged minutes but the newest, then that one as the sender marks it
        # (``done`` rewrites written.json whole: once, not once a minute)
        store._written = {a.name: set(written[:-1]) for a in accounts}
        for a in accounts:
            store.done(a.name, written[-1], now)


def _charts(path: str, accounts: Sequence[Account], now: float) -> None:
    rng = random.Random(17)
    newest = newest_ready(now) + MINUTE
    points = {
        a.name: tuple(
            Point(float(end), rng.uniform(1e3, 1e5), rng.uniform(1e8, 1e10), rng.random())
            for end in range(newest - 59 * MINUTE, newest + MINUTE, MINUTE)
        )
        for a in accounts
    }
    state.write_atomic(history_file.charts_path(path), history_file.dumps(points, now))


def write(state_file: str, accounts: Sequence[Account], hours: float, now: float) -> None:
    """Every file of a daemon that ran ``hours`` until ``now`` with these accounts and its
    traffic state at ``state_file`` (the directory exists)."""
    _state(state_file, accounts, hours, now)
    _audit(state_file, accounts, hours, now)
    _remote_write(state_file, accounts, hours, now)
    _charts(state_file, accounts, now)


def _tree(path: Path) -> tuple[int, int]:
    files = [p for p in path.rglob("*") if p.is_file()] if path.is_dir() else []
    return sum(p.stat().st_size for p in files), len(files)


def sizes(state_file: str) -> dict[str, int]:
    """Bytes of every file the daemon keeps beside ``state_file``, by kind, and how many
    files its two directories hold (``*_files``)."""

    def size(p: str) -> int:
        return Path(p).stat().st_size if Path(p).is_file() else 0

    audit, audit_files = _tree(Path(record_dir(state_file)))
    pending, pending_files = _tree(Path(store_dir(state_file)))
    return {
        "state": size(state_file),
        "cursors": size(state_lost.cursors_path(state_file)),
        "charts": size(history_file.charts_path(state_file)),
        "audit": audit,
        "audit_files": audit_files,
        "remote_write": pending,
        "remote_write_files": pending_files,
    }
