"""The state file read: its JSON checked entry by entry back into ledgers (``parse``), a
missing or unusable file reported and started afresh from (``load``)."""

from __future__ import annotations

import json
import math
from array import array
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import structlog

from exporter.support.ownfiles import read_own
from exporter.traffic import exposure
from exporter.traffic.counters import LATE_PARTS, Late, Series, requests, shown_mask
from exporter.traffic.families import SCOPES
from exporter.traffic.ledger import AccountLedger
from exporter.traffic.parse import COUNT_INDEX, COUNT_KEYS, Values, blank
from exporter.traffic.runs import HALVES, Run
from exporter.traffic.state import STATE_VERSION
from exporter.traffic.state_lost import Lost, salvage

log = structlog.get_logger("exporter.traffic.state")


class StateError(ValueError):
    """The state file is not one we wrote (corrupt, truncated, another version)."""


def _need(ok: bool, where: str, what: str) -> None:
    if not ok:
        raise StateError(f"{where}: expected {what}")


def _obj(value: Any, where: str) -> dict[str, Any]:
    _need(isinstance(value, dict), where, "an object")
    return value  # type: ignore[no-any-return]  # checked just above


def _int(value: Any, where: str, minute: bool = False) -> int:
    ok = isinstance(value, int) and not isinstance(value, bool)
    _need(ok and (not minute or value % 60 == 0), where, "a minute boundary" if minute else "int")
    return int(value)


def _count(value: Any, where: str) -> int:
    """A whole number of 0 or more (a stage, a window size, a number of failures)."""
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
    _need(ok, where, "a whole number of 0 or more")
    return int(value)


def _float(value: Any, where: str) -> float:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    _need(ok, where, "a number")
    return float(value)


_NUMBERS = frozenset((int, float))


def _plain_counts(raw: list[Any]) -> Values | None:
    """``raw`` as values when every item is a finite number of 0 or more (most often, checked
    in C); None otherwise: the item by item check names what is wrong, or keeps the nulls."""
    if not _NUMBERS.issuperset(map(type, raw)):
        return None
    try:
        out = array("d", raw)
    except OverflowError:
        return None
    if out and (min(out) < 0 or not math.isfinite(sum(out))):  # NaN and infinity sum to such
        return None
    return out


class _Decoder:
    """Maps the saved key order onto today's COUNT_KEYS (unknown saved keys are dropped)."""

    def __init__(self, keys: Any, exported: Any = None) -> None:
        ok = isinstance(keys, list) and all(isinstance(k, str) for k in keys)
        _need(ok, "count_keys", "a list of metric names")
        self.slots = [COUNT_INDEX.get(k) for k in keys]
        self.same_keys = self.slots == list(range(len(COUNT_KEYS)))  # saved in today's order
        self.rejected: list[str] = []  # entries left out, what was wrong with each
        self.hidden: dict[str, list[str]] = {}  # per scope, keys not exported before the restart
        # Per scope, which keys Prometheus saw before the restart (all, in older files).
        self.exported = {scope: bytearray(b"\x01" * len(COUNT_KEYS)) for scope in SCOPES}
        self.late_exported = set(LATE_PARTS)  # the lateness counters Prometheus saw
        if exported is not None:
            _need(isinstance(exported, dict), "exported_keys", "an object")
            for scope in SCOPES:
                names = exported.get(scope, [])
                ok = isinstance(names, list) and all(isinstance(k, str) for k in names)
                _need(ok, f"exported_keys.{scope}", "a list of metric names")
                mask = bytearray(len(COUNT_KEYS))
                for name in names:
                    if name in COUNT_INDEX:
                        mask[COUNT_INDEX[name]] = 1
                self.exported[scope] = mask
            # Counts Prometheus was never shown: dropped, so a key exported after the
            # restart starts at 0 and counts only what follows (``exposure``).
            late = exported.get("late")
            if isinstance(late, list):  # as ``exposure.hidden`` reads it
                self.late_exported = {p for p in LATE_PARTS if p in late}
            self.hidden = exposure.hidden(
                {k: v for k, v in exported.items() if isinstance(v, list)}
            )

    def shown(self, values: Values, scope: str) -> bytearray:
        """Keys published with their value before the restart: a value, and exported."""
        return bytearray(
            a & b for a, b in zip(shown_mask(values), self.exported[scope], strict=True)
        )

    def values(self, raw: Any, where: str) -> Values:
        _need(isinstance(raw, list) and len(raw) == len(self.slots), where, "a list of values")
        if self.same_keys and (plain := _plain_counts(raw)) is not None:
            return plain
        out = blank()
        for x, i in zip(raw, self.slots, strict=True):
            if x is None:
                continue
            number = isinstance(x, int | float) and not isinstance(x, bool)
            _need(number and math.isfinite(x) and x >= 0, where, "counts of 0 or more")
            if i is not None:
                out[i] = float(x)
        return out

    def account(self, raw: Any, where: str, saved_at: float) -> AccountLedger:
        d = _obj(raw, where)
        led = AccountLedger()
        cursor = d.get("cursor")
        led.cursor = None if cursor is None else _int(cursor, f"{where}.cursor", minute=True)
        refused = d.get("long_windows_refused", False)
        _need(isinstance(refused, bool), f"{where}.long_windows_refused", "true or false")
        led.long_refused = refused
        led.released_at = _float(d.get("released_at", 0.0), f"{where}.released_at")
        moved = d.get("released_moved", True)  # files before the reason: as a move
        _need(isinstance(moved, bool), f"{where}.released_moved", "true or false")
        led.released_moved = moved
        schedule = d.get("schedule", [])  # files before it: none (one last read, 5 minutes)
        _need(
            isinstance(schedule, list)
            and all(type(a) is int and a > 0 for a in schedule)
            and schedule == sorted(set(schedule)),
            f"{where}.schedule",
            "rising ages in minutes",
        )
        led.schedule = tuple(schedule)
        led.slow_cap = _count(d.get("slow_cap", 0), f"{where}.slow_cap")
        led.slow_until = _float(d.get("slow_until", 0.0), f"{where}.slow_until")
        led.totals = self.values(d.get("totals"), f"{where}.totals")
        led.totals_shown = self.shown(led.totals, "account")  # published before the restart
        for key, item in _obj(d.get("series", {}), f"{where}.series").items():
            with self.entry():
                led.series[key] = self.series(item, f"{where}.series.{key}", saved_at)
        for age, item in _obj(d.get("late", {}), f"{where}.late").items():
            with self.entry():
                led.late[self.age(age, f"{where}.late.{age}")] = self.late(
                    item, f"{where}.late.{age}", self.late_exported
                )
        pending = d.get("pending", [])
        _need(isinstance(pending, list), f"{where}.pending", "a list")
        for i, p in enumerate(pending):
            with self.entry():
                led.pending.append(self.run(p, f"{where}.pending[{i}]", sorted(led.late)))
        with self.entry():
            share = d.get("late_share")
            led.late_share = None if share is None else _float(share, f"{where}.late_share")
        with self.entry():
            share = d.get("last_stage_share")
            w = f"{where}.last_stage_share"
            led.last_stage_share = None if share is None else _float(share, w)
        exposure.start_at_zero(led, self.hidden)
        return led

    @contextmanager
    def entry(self) -> Iterator[None]:
        """One entry of the file: a bad one is left out and noted, the rest goes on."""
        try:
            yield
        except StateError as exc:
            self.rejected.append(str(exc))

    def series(self, item: Any, w: str, saved_at: float) -> Series:
        ok = isinstance(item, list) and len(item) in (3, 4)
        what = "[name, cname, values, last_seen]"
        _need(ok and all(isinstance(x, str) for x in item[:2]), w, what)
        seen = _float(item[3], f"{w}[3]") if len(item) == 4 else saved_at
        series = Series(item[0], item[1], self.values(item[2], w), seen)
        series.shown = self.shown(series.values, "resource")
        return series

    @staticmethod
    def age(age: str, w: str) -> int:
        _need(age.isdigit(), w, "minutes -> [requests, hit_bytes, share or null]")
        return int(age)

    @staticmethod
    def late(item: Any, w: str, shown: set[str]) -> Late:
        ok = isinstance(item, list) and len(item) == 3
        _need(ok, w, "minutes -> [requests, hit_bytes, share or null]")
        share = None if item[2] is None else _float(item[2], f"{w}[2]")
        return Late(_float(item[0], f"{w}[0]"), _float(item[1], f"{w}[1]"), share, set(shown))

    def run(self, p: Any, w: str, ages: list[int]) -> Run:
        """An unsettled run; ``ages``: the ages the account's settle reads were measured at
        (``late``), to migrate a file that names the run's stage by index (``migrate_stage``)."""
        p = _obj(p, w)
        start = _int(p.get("start"), f"{w}.start", minute=True)
        end = _int(p.get("end"), f"{w}.end", minute=True)
        _need(end > start, f"{w}.end", "a minute after start")
        at = _float(p.get("last_read_at"), f"{w}.last_read_at")
        run = Run(start, end, at, self.values(p.get("totals"), f"{w}.totals"))
        run.first_read_at = _float(p.get("first_read_at", at), f"{w}.first_read_at")
        run.failures = _count(p.get("failures", 0), f"{w}.failures")
        folded = p.get("folded", [])
        ok = isinstance(folded, list) and all(isinstance(x, str) for x in folded)
        _need(ok, f"{w}.folded", "a list of resource ids")
        run.folded = frozenset(folded)
        run.retry_at = _float(p.get("retry_at", 0.0), f"{w}.retry_at")
        if "settled" in p:
            run.settled = _count(p["settled"], f"{w}.settled")
            run.reading = _count(p.get("reading", 0), f"{w}.reading")
        else:
            run.settled = migrate_stage(_count(p.get("stage", 0), f"{w}.stage"), ages)
        done = p.get("done", [])
        ok = isinstance(done, list) and all(x in HALVES for x in done)
        _need(ok, f"{w}.done", f"a list of {' and '.join(HALVES)}")
        run.done = frozenset(done)
        run.failing_since = _float(p.get("failing_since", 0.0), f"{w}.failing_since")
        first = p.get("first")  # files before stages: what the first read counted
        run.first = requests(run.totals) if first is None else _float(first, f"{w}.first")
        for rid, v in _obj(p.get("resources", {}), f"{w}.resources").items():
            run.resources[rid] = self.values(v, f"{w}.resources.{rid}")
        return run


def migrate_stage(stage: int, ages: list[int]) -> int:
    """The age of the last settle read done by a run a file names by ``stage`` (settle reads
    done, an index into the schedule of the time, which the file does not hold). Every read
    done measured its age into ``late``, so with ``ages`` those ages sorted, the stage-th is at
    most the age really done (a subset's n-th smallest is never below the set's): the run is
    read again at every age of today's schedule above it, never one too few. Without enough
    ages measured: 0, read at every age of today's schedule."""
    if stage == 0 or len(ages) < stage:
        return 0
    return ages[stage - 1]


def parse(data: bytes, rejected: list[str] | None = None) -> dict[str, AccountLedger]:
    """State bytes -> ledgers; StateError names what is wrong with the file as a whole.

    The file is read entry by entry: an account whose own fields are bad, or one series,
    unsettled run or lateness entry, is left out alone (what was wrong is appended to
    ``rejected``) and the rest is restored."""
    try:
        doc = json.loads(data)
    except ValueError as exc:
        raise StateError(f"not JSON ({exc})") from None
    doc = _obj(doc, "file")
    version = doc.get("version")
    _need(version == STATE_VERSION, "version", f"{STATE_VERSION}, got {version!r}")
    dec = _Decoder(doc.get("count_keys"), doc.get("exported_keys"))
    saved_at = _float(doc.get("saved_at", 0.0), "saved_at")
    accounts = _obj(doc.get("accounts"), "accounts")
    out: dict[str, AccountLedger] = {}
    for name, raw in accounts.items():
        with dec.entry():
            out[name] = dec.account(raw, f"accounts.{name}", saved_at)
    if rejected is not None:
        rejected.extend(dec.rejected)
    return out


def load(
    path: str, rejected: list[str] | None = None, lost: list[Lost] | None = None
) -> dict[str, AccountLedger]:
    """Ledgers from the state file; a missing or unusable file gives none (never raises).

    An unusable file is reported with a warning naming it and the problem, and left in
    place (it is replaced by the next save); what its text still says is appended to
    ``lost`` (``salvage``). Entries left out (``parse``) are appended to ``rejected`` and
    reported in one warning.
    """
    try:
        data = read_own(path)
    except FileNotFoundError:
        log.info("traffic_state_absent", path=path)
        return {}
    except OSError as exc:
        log.warning("traffic_state_unreadable", path=path, problem=str(exc))
        return {}
    problems: list[str] = []
    try:
        ledgers = parse(data, problems)
    except StateError as exc:
        log.warning("traffic_state_ignored", path=path, problem=str(exc))
        if lost is not None:
            lost.append(salvage(data, path, str(exc)))
        return {}
    if problems:
        log.warning(
            "traffic_state_entries_rejected",
            path=path,
            entries=len(problems),
            problem=problems[0],
            effect="those entries start afresh; the rest of the file is restored",
        )
        if rejected is not None:
            rejected.extend(problems)
    log.info("traffic_state_loaded", path=path, accounts=len(ledgers))
    return ledgers
