"""What a state file ignored as a whole still says: its own text as far as it is legible, and
the cursor file written beside it after each save (``dump_cursors``)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass, field

from exporter.support.ownfiles import read_own
from exporter.traffic.ledger import AccountLedger

# What a file ignored as a whole still says, read from its text as it is: when it was saved
# and every account's cursor (the keys ``state.dump`` writes first), else the cursor that opens an
# account's object.
_SAVED_AT = re.compile(rb'"saved_at":\s*([0-9]+(?:\.[0-9]*)?)')
_CURSORS = re.compile(rb'"cursors":\s*(\{[^{}]*\})')
_CURSOR = re.compile(rb'"((?:[^"\\]|\\.)*)":\s*\{\s*"cursor":\s*([0-9]+)[,}]')


@dataclass(frozen=True)
class Lost:
    """A state file ignored as a whole (``state_read.load``): when it was saved and the cursors, by
    account, as far as its text still says (``saved_at`` None: not legible; the file's own
    time is no witness: a copy or a restore sets it). The counters and unsettled runs it held
    are gone: ``Accounts`` reads on from these cursors and names what cannot be read."""

    path: str
    problem: str
    saved_at: float | None
    cursors: dict[str, int] = field(default_factory=dict)
    # by account, the minutes owed a settle read at that save (the cursor file's, when it is
    # of the same save as ``saved_at``): what a start after it counts as given up
    owed: dict[str, int] = field(default_factory=dict)


CURSOR_FILE_LIMIT = 16 << 20  # a few bytes an account: far more than any account list


def cursors_path(state_file: str) -> str:
    """Where the cursors of the state file's last save are kept, on their own."""
    return f"{state_file}.cursors.json"


def dump_cursors(ledgers: Mapping[str, AccountLedger], saved_at: float) -> bytes:
    """The cursor file: when the state file was saved, each account's cursor and the minutes
    it owed a settle read (a few bytes an account), written after each save of the state
    file succeeds: what a restart reads on from, and names as given up, when the state file
    itself is ignored as a whole (``salvage``)."""
    cursors = {name: led.cursor for name, led in ledgers.items()}
    owed = {name: sum(run.minutes for run in led.pending) for name, led in ledgers.items()}
    doc = {"saved_at": saved_at, "cursors": cursors, "owed": owed}
    return json.dumps(doc).encode()


def _minutes_by_account(raw: object, step: int) -> dict[str, int]:
    """A JSON object of whole numbers by account, those a multiple of ``step`` and >= 0."""
    if not isinstance(raw, dict):
        return {}
    return {
        k: v
        for k, v in raw.items()
        if isinstance(k, str) and type(v) is int and v >= 0 and v % step == 0
    }


def _cursor_file(path: str) -> tuple[float | None, dict[str, int], dict[str, int]]:
    """What the cursor file beside the state file ``path`` says: its save's time, cursors and
    minutes owed (nothing when it is absent or not one ``dump_cursors`` wrote)."""
    try:
        doc = json.loads(read_own(cursors_path(path), CURSOR_FILE_LIMIT))
    except (OSError, ValueError):
        return None, {}, {}
    if not isinstance(doc, dict):
        return None, {}, {}
    at = doc.get("saved_at")
    saved_at = float(at) if isinstance(at, (int, float)) and not isinstance(at, bool) else None
    return (
        saved_at,
        _minutes_by_account(doc.get("cursors"), 60),
        _minutes_by_account(doc.get("owed"), 1),
    )


def salvage(data: bytes, path: str, problem: str) -> Lost:
    """What ``data``, a state file ignored as a whole, still says (``Lost``): its own text
    first, then the cursor file of its last save (``dump_cursors``) for what the text no
    longer holds."""
    found = _SAVED_AT.search(data)
    saved_at = float(found.group(1)) if found is not None else None
    found_all = _CURSORS.search(data)
    pairs: list[tuple[object, object]] = []
    if found_all is not None:
        with suppress(ValueError):
            pairs = list(json.loads(found_all.group(1)).items())
    for match in _CURSOR.finditer(data):
        try:
            pairs.append((json.loads(b'"' + match.group(1) + b'"'), int(match.group(2))))
        except ValueError:
            continue
    cursors: dict[str, int] = {}
    for name, cursor in pairs:
        if isinstance(name, str) and type(cursor) is int and cursor % 60 == 0:
            cursors.setdefault(name, cursor)
    kept_at, kept, owed = _cursor_file(path)
    for name, cursor in kept.items():
        cursors.setdefault(name, cursor)
    if saved_at is not None and saved_at != kept_at:
        owed = {}  # of another save than the text's
    return Lost(path, problem, saved_at if saved_at is not None else kept_at, cursors, owed)
