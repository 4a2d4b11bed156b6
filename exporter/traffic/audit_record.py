"""The audit record on disk, written in pieces: the directory ``<traffic.state_file>.audit/``.

Each window whose last settle read is done is appended as one line to the file of the day it
settled on (``counted-<YYYY-MM-DD>-<keys>.jsonl``: a first line ``{"count_keys": [...]}``, then
``[account, start, end, settled_at, [totals]]`` per window; ``<keys>`` names the counted keys,
so a version counting other keys starts files of its own). ``head.json`` holds what changes in
place: per account the audit under way (its windows by start, end and settle time), when the
next one is due, the minutes counted equal or different and the latest results. A day file
is deleted once every window in it is older than ``keep_seconds`` (48 h): the record is at most
three day files and a head.

A save appends the lines of the windows settled since the last one and rewrites the head; no
piece is larger than one account's head, so no single serialisation holds the GIL long, and
the pieces are made and written on the refresh worker (``Auditor``), never on the event loop.
docs/performance.md (*The audit record*) has the figures and the size bound.

The older whole-file record (``<traffic.state_file>.audit.json``, one JSON document) is still
read when no head is there; the first save writes it in pieces and removes it.
"""

from __future__ import annotations

import calendar
import hashlib
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from exporter.support.ownfiles import read_own
from exporter.traffic.audit import AccountAudit, AuditBook, Counted, Outcome
from exporter.traffic.parse import COUNT_INDEX, COUNT_KEYS, Values
from exporter.traffic.state import write_atomic

HEAD = "head.json"
DAY_SECONDS = 86_400


def record_dir(state_file: str) -> str:
    """Where the audit record of a state file is kept ('' when there is no state file)."""
    return f"{state_file}.audit" if state_file else ""


def legacy_path(state_file: str) -> str:
    """The older whole-file record of a state file (read, then replaced by the pieces)."""
    return f"{state_file}.audit.json" if state_file else ""


KEYS_TAG = hashlib.sha256("\n".join(COUNT_KEYS).encode()).hexdigest()[:8]


def day_file(settled_at: float) -> str:
    day = time.strftime("%Y-%m-%d", time.gmtime(settled_at))
    return f"counted-{day}-{KEYS_TAG}.jsonl"


def _enc(v: Values) -> list[float | None]:
    return [None if x != x else x for x in v]


def _outcome(o: Outcome | None) -> list[Any] | None:
    return None if o is None else [o.at, o.equal, o.differs, _enc(o.difference)]


@dataclass(frozen=True, slots=True)
class Pieces:
    """What one save writes, taken from the book on the loop: the windows settled since the
    last save (shared, never changed once settled) and each account's head, as values."""

    lines: tuple[tuple[str, Counted], ...]
    heads: tuple[tuple[str, dict[str, Any]], ...]


class AuditRecord:
    """The record of one state file: what is still to append, and how to write and read it."""

    def __init__(self, directory: str, legacy: str = "") -> None:
        self.directory = directory
        self.legacy = legacy
        self._appends: list[tuple[str, Counted]] = []
        self._legacy_left = False  # a whole-file record read, not yet replaced

    def settled(self, account: str, counted: Counted) -> None:
        """``counted`` goes into the next save's lines (without a directory there is no save:
        the book in memory is the whole record)."""
        if self.directory:
            self._appends.append((account, counted))

    def take(self, book: AuditBook) -> Pieces:
        """The next save's pieces (on the loop: cheap, small values; the book may change
        afterwards, the pieces do not)."""
        lines, self._appends = tuple(self._appends), []
        heads = tuple((name, _head(a)) for name, a in book.accounts.items())
        return Pieces(lines, heads)

    def put_back(self, pieces: Pieces) -> None:
        """A save failed: its lines go into the next one (before the newer ones)."""
        self._appends[:0] = pieces.lines

    def write(self, pieces: Pieces, now: float, keep_seconds: float) -> None:
        """Append the lines, rewrite the head, delete day files past ``keep_seconds`` (on the
        worker; OSError when the disk refuses)."""
        folder = Path(self.directory)
        folder.mkdir(parents=True, exist_ok=True)
        by_day: dict[str, list[bytes]] = {}
        for account, c in pieces.lines:
            line = json.dumps([account, c.start, c.end, c.settled_at, _enc(c.totals)])
            by_day.setdefault(day_file(c.settled_at), []).append(line.encode() + b"\n")
        for name, lines in by_day.items():
            _append(folder / name, lines)
        head = b"".join(_head_document(pieces.heads))
        write_atomic(str(folder / HEAD), head)
        for old in folder.glob("counted-*.jsonl"):
            if _day_end(old.name) < now - keep_seconds:
                old.unlink(missing_ok=True)
        if self._legacy_left and self.legacy:
            Path(self.legacy).unlink(missing_ok=True)
            self._legacy_left = False

    def load(self, book: AuditBook) -> None:
        """Fill ``book`` from the record (the pieces, else the older whole file); raises
        OSError or ValueError (KeyError, TypeError, IndexError) when it is not ours."""
        head_path = Path(self.directory) / HEAD if self.directory else None
        if head_path is not None and head_path.exists():
            book.load_json(_whole(json.loads(read_own(str(head_path))), self._rows()))
            return
        if not self.legacy:
            return
        try:
            data = read_own(self.legacy)
        except FileNotFoundError:
            return
        book.load_json(json.loads(data))
        self._legacy_left = True
        for name, a in book.accounts.items():  # the first save writes it all in pieces
            self._appends += [(name, c) for c in a.counted]

    def _rows(self) -> dict[str, list[list[Any]]]:
        """Every window line of the day files, per account, in the current keys' order (a
        line cut short by a crash is left out)."""
        rows: dict[str, list[list[Any]]] = {}
        for path in sorted(Path(self.directory).glob("counted-*.jsonl")):
            for account, row in _read_day(path):
                rows.setdefault(account, []).append(row)
        return rows


def _head(a: AccountAudit) -> dict[str, Any]:
    return {
        "since": a.counted[0].settled_at if a.counted else None,
        "sample": [[c.start, c.end, c.settled_at] for c in a.sample],
        "due_at": a.due_at,
        "minutes": dict(a.minutes),
        "running": _outcome(a.running),
        "last": _outcome(a.last),
    }


def _head_document(heads: tuple[tuple[str, dict[str, Any]], ...]) -> Iterator[bytes]:
    """The head as one JSON document made of one small ``json.dumps`` per account."""
    yield b'{"version":2,"count_keys":' + json.dumps(list(COUNT_KEYS)).encode()
    yield b',"accounts":{'
    for i, (name, head) in enumerate(heads):
        yield (b"," if i else b"") + json.dumps(name).encode() + b":" + json.dumps(head).encode()
    yield b"}}"


def _in_order(keys: list[str], values: list[Any]) -> list[Any]:
    """``values`` (of ``keys``) in COUNT_KEYS order, None where a key is not among them."""
    if keys == list(COUNT_KEYS):
        return values
    out: list[Any] = [None] * len(COUNT_KEYS)
    for key, x in zip(keys, values, strict=True):
        if key in COUNT_INDEX:
            out[COUNT_INDEX[key]] = x
    return out


def _whole(head: dict[str, Any], rows: dict[str, list[list[Any]]]) -> dict[str, Any]:
    """The head and the day files' rows (in COUNT_KEYS order) as the whole-file document
    ``load_json`` reads."""
    if head.get("version") != 2:
        raise ValueError("not an audit record head of this version")
    keys = list(head["count_keys"])

    def outcome(raw: list[Any] | None) -> list[Any] | None:
        return None if raw is None else [*raw[:3], _in_order(keys, raw[3])]

    accounts: dict[str, Any] = {}
    for name, h in head["accounts"].items():
        since = h["since"]
        counted = [r for r in rows.get(name, []) if since is not None and r[2] >= since]
        index = {(r[0], r[1], r[2]): i for i, r in enumerate(counted)}
        sample = [index[key] for s in h["sample"] if (key := (s[0], s[1], s[2])) in index]
        accounts[name] = {
            "counted": counted,
            "sample": sample,
            "due_at": h["due_at"],
            "minutes": h["minutes"],
            "running": outcome(h["running"]),
            "last": outcome(h["last"]),
        }
    return {"count_keys": list(COUNT_KEYS), "accounts": accounts}


def _read_day(path: Path) -> Iterator[tuple[str, list[Any]]]:
    lines = read_own(str(path)).split(b"\n")
    keys = list(json.loads(lines[0])["count_keys"])
    for raw in lines[1:]:
        try:
            account, start, end, settled_at, values = json.loads(raw)
        except ValueError:  # the empty text after the last line, or a line cut short
            continue
        totals = _in_order(keys, values)
        yield str(account), [int(start), int(end), float(settled_at), totals]


def _append(path: Path, lines: list[bytes]) -> None:
    """Append ``lines`` to a day file (its keys line first when it is new), then fsync."""
    with open(path, "a+b") as fh:
        size = fh.seek(0, os.SEEK_END)
        if size == 0:
            fh.write(json.dumps({"count_keys": list(COUNT_KEYS)}).encode() + b"\n")
        else:
            fh.seek(size - 1)
            if fh.read(1) != b"\n":  # a line cut short by a crash stays on its own
                fh.write(b"\n")
        for line in lines:
            fh.write(line)
        fh.flush()
        os.fsync(fh.fileno())


def _day_end(name: str) -> float:
    """The end of the day a day file is of (+inf for a name that is not one)."""
    try:
        day = time.strptime(name[len("counted-") : len("counted-") + 10], "%Y-%m-%d")
    except ValueError:
        return float("inf")
    return float(calendar.timegm(day) + DAY_SECONDS)
