"""The landing charts' last hour, kept beside the traffic state file so a restart does not
blank them: ``<traffic.state_file>.charts.json``.

Written at most every ``SAVE_SECONDS`` after a traffic poll (``save_off_loop``: the points
taken on the loop, the file made, written and fsynced on the refresh worker) and at shutdown
(atomically, like the state file); read once at start-up, keeping the points of the last
hour. A file that cannot be read or is not ours is logged and ignored: the charts start
empty, as before.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import structlog

from exporter.support.offloop import off_loop
from exporter.support.ownfiles import read_own
from exporter.traffic.history import HOUR_SECONDS, Point, TrafficHistory

log = structlog.get_logger("exporter.traffic.history_file")

VERSION = 1
SAVE_SECONDS = 60.0

Points = Mapping[str, tuple[Point, ...]]  # every account's points, immutable


def charts_path(state_file: str) -> str:
    """Where the charts of a state file are kept ('' when there is no state file)."""
    return f"{state_file}.charts.json" if state_file else ""


def dumps(points: Points, saved_at: float) -> bytes:
    """The file of ``points`` (``TrafficHistory.snapshot``: immutable, any thread may read)."""
    accounts = {
        account: [[p.end, p.requests_per_second, p.bytes_per_second, p.hit_ratio] for p in rows]
        for account, rows in points.items()
    }
    doc = {"version": VERSION, "saved_at": saved_at, "accounts": accounts}
    return json.dumps(doc, separators=(",", ":"), allow_nan=False).encode()


def _number(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"not a number: {value!r}")
    return float(value)


def parse(data: bytes, now: float) -> dict[str, list[Point]]:
    """The points of each account within the hour before ``now`` (ValueError if not ours)."""
    doc = json.loads(data)
    if not isinstance(doc, dict) or doc.get("version") != VERSION:
        raise ValueError("not a charts file of this version")
    accounts = doc.get("accounts")
    if not isinstance(accounts, dict):
        raise ValueError("accounts: expected a mapping")
    out: dict[str, list[Point]] = {}
    for account, rows in accounts.items():
        if not isinstance(rows, list):
            raise ValueError(f"{account}: expected a list of points")
        points = []
        for row in rows:
            if not isinstance(row, list) or len(row) != 4 or row[0] is None:
                raise ValueError(f"{account}: a point is [end, requests, bytes, hit ratio]")
            end, rps, bps, hit = (_number(x) for x in row)
            assert end is not None
            if now - HOUR_SECONDS < end <= now:
                points.append(Point(end, rps, bps, hit))
        out[str(account)] = sorted(points, key=lambda p: p.end)
    return out


class HistoryFile:
    """Loads the charts into ``history`` at start-up and saves them now and then."""

    def __init__(self, history: TrafficHistory, path: str) -> None:
        self._history = history
        self._path = path
        self._saved_at = float("-inf")

    def load(self, now: float) -> None:
        if not self._path:
            return
        try:
            data = read_own(self._path)
        except FileNotFoundError:
            return
        except OSError as exc:
            log.warning("charts_file_unreadable", path=self._path, problem=str(exc))
            return
        try:
            accounts = parse(data, now)
        except ValueError as exc:  # json.JSONDecodeError is one
            log.warning("charts_file_ignored", path=self._path, problem=str(exc))
            return
        for account, points in accounts.items():
            self._history.restore(account, points)
        self._saved_at = now

    async def save_off_loop(self, now: float) -> None:
        """Write the file when ``SAVE_SECONDS`` passed since the last write: the points taken
        on the event loop (``take``), the file made and written on the refresh worker."""
        points = self.take(now)
        if points is not None:
            await off_loop(self.write, points, now)

    def take(self, now: float, force: bool = False) -> Points | None:
        """The points to write at ``now`` (a dict of immutable tuples), the write counted as
        done; None when there is no file, or when ``SAVE_SECONDS`` have not passed since the
        last write and not ``force``."""
        if not (self._path and (force or now - self._saved_at >= SAVE_SECONDS)):
            return None
        self._saved_at = now
        return self._history.snapshot()

    def write(self, points: Points, now: float) -> None:
        """The file made from ``points`` and written (on the refresh worker)."""
        from exporter.traffic.state import write_atomic  # here: traffic imports this module

        try:
            write_atomic(self._path, dumps(points, now))
        except OSError as exc:
            log.warning("charts_file_save_failed", path=self._path, problem=str(exc))
