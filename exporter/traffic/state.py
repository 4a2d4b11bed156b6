"""The state file written: cursors, counters and unsettled runs per account as compact JSON,
piece by piece (``pieces``) or whole (``dump``), and written atomically (``write_atomic``)."""

from __future__ import annotations

import hashlib
import math
from array import array
from collections.abc import Iterable, Iterator, Mapping
from json.encoder import encode_basestring_ascii
from typing import Any, cast

from exporter.support import jsonpieces
from exporter.support.partfile import Part, Piece, write_atomic_with
from exporter.traffic.counters import Series
from exporter.traffic.ledger import AccountLedger
from exporter.traffic.parse import COUNT_KEYS, Values
from exporter.traffic.runs import Run

STATE_VERSION = 1
# Series per part of the file (``PartFile``): a part is copied from the file before when
# none of its series changed (docs/performance.md, *The state file's save*).
SERIES_PART = 256
Encoded = list[float | int | None]


def _enc(values: Values) -> Encoded:
    """Whole values as ints (as they were counted), a key not carried (NaN) as null."""
    try:  # most often every value is a whole number: converted and compared in C
        whole = list(map(int, values))
    except (ValueError, OverflowError):  # NaN, infinity
        whole = []
    if whole and whole == values.tolist() and min(whole) > -(2**53) and max(whole) < 2**53:
        return cast(Encoded, whole)
    return [None if x != x else int(x) if x.is_integer() and abs(x) < 2**53 else x for x in values]


def _text(values: Values) -> str:
    """``_enc(values)`` as JSON text; when every value is whole (most often), written from
    the ints at once (Python writes a list of ints as JSON does, with a space after commas)."""
    listed = values.tolist()
    try:
        whole = list(map(int, listed))
    except (ValueError, OverflowError):  # NaN, infinity
        whole = []
    if whole and whole == listed and min(whole) > -(2**53) and max(whole) < 2**53:
        return repr(whole).replace(" ", "")
    return jsonpieces.encoded(_enc(values))


def _key(kind: bytes, described: object, arrays: Iterable[Values]) -> bytes:
    """A part's key: a digest of ``described`` (the repr of what its text names besides the
    arrays, their lengths included) and of the arrays' bytes."""
    digest = hashlib.blake2b(kind, digest_size=16)
    digest.update(repr(described).encode())
    digest.update(b"".join(map(array.tobytes, arrays)))
    return digest.digest()


def _series_part(items: list[tuple[str, Series]]) -> Part:
    """``items`` of an account's series, as the members of its ``series`` object."""

    def make() -> str:
        esc, dumps, enc = encode_basestring_ascii, jsonpieces.dumps, jsonpieces.Encoded
        return ",".join(
            [
                f"{esc(k)}:{dumps([s.name, s.cname, enc(_text(s.values)), s.last_seen])}"
                for k, s in items
            ]
        )

    described = [(k, s.name, s.cname, s.last_seen, len(s.values)) for k, s in items]
    return Part(_key(b"series", described, [s.values for _, s in items]), make)


def _resources_part(resources: dict[str, Values]) -> Part:
    """A run's ``resources`` object."""

    def make() -> str:
        esc = encode_basestring_ascii
        return "{" + ",".join([f"{esc(rid)}:{_text(v)}" for rid, v in resources.items()]) + "}"

    described = (list(resources), list(map(len, resources.values())))
    return Part(_key(b"resources", described, resources.values()), make)


def _run(run: Run) -> Iterator[Piece]:
    """One pending run as JSON text (what ``jsonpieces.dumps`` writes of the object with these
    keys, in this order), its ``resources`` a part of their own: most of a save's text is its
    runs' resources, and most runs are as the save before wrote them. Its times and counts are
    finite numbers (ints and floats written as JSON writes them); one that is not is refused as
    ``dumps`` refuses it."""
    times = (run.last_read_at, run.first_read_at, run.retry_at, run.failing_since, run.first)
    if not all(map(math.isfinite, times)):
        for t in times:
            jsonpieces.scalar(t)  # raises, naming the value
    esc = encode_basestring_ascii
    folded = ",".join([esc(f) for f in sorted(run.folded)])
    done = ",".join([esc(d) for d in sorted(run.done)])
    yield (
        f'{{"start":{run.start!r},"end":{run.end!r},"last_read_at":{run.last_read_at!r},'
        f'"first_read_at":{run.first_read_at!r},"totals":{_text(run.totals)},"resources":'
    )
    yield _resources_part(run.resources)
    yield (
        f',"folded":[{folded}],"failures":{run.failures!r},'
        f'"retry_at":{run.retry_at!r},"settled":{run.settled!r},"reading":{run.reading!r},'
        f'"done":[{done}],"failing_since":{run.failing_since!r},"first":{run.first!r}}}'
    )


def _open(doc: dict[str, Any]) -> str:
    """The compact JSON of ``doc`` without its closing brace: more members follow."""
    return jsonpieces.dumps(doc)[:-1]


def _account(led: AccountLedger) -> Iterator[Piece]:
    """One account's object: its series in parts of ``SERIES_PART``, each run's resources a
    part (``_run``), the rest made at every save (a few hundred bytes)."""
    head = {
        "cursor": led.cursor,
        "long_windows_refused": led.long_refused,
        "released_at": led.released_at,
        "released_moved": led.released_moved,
        "schedule": list(led.schedule),
        "slow_cap": led.slow_cap,
        "slow_until": led.slow_until,
        "totals": jsonpieces.Encoded(_text(led.totals)),
    }
    yield _open(head) + ',"series":{'
    items = list(led.series.items())
    for n in range(0, len(items), SERIES_PART):
        if n:
            yield ","
        yield _series_part(items[n : n + SERIES_PART])
    yield '},"pending":['
    for i, run in enumerate(led.pending):
        if i:
            yield ","
        yield from _run(run)
    tail = {
        "late": {
            str(age): [late.requests, late.hit_bytes, late.share]
            for age, late in sorted(led.late.items())
        },
        "late_share": led.late_share,
        "last_stage_share": led.last_stage_share,
    }
    yield "]," + jsonpieces.dumps(tail)[1:]


def pieces(
    ledgers: Mapping[str, AccountLedger],
    saved_at: float,
    exported: Mapping[str, list[str]] | None = None,
) -> Iterator[Piece]:
    """The whole state as compact JSON, piece by piece (``PartFile``: a part the save before
    wrote unchanged is copied from the file it wrote); values listed in the order of
    ``count_keys``; ``exported`` names, per scope (account, resource), the counted keys
    published as counter samples (``families.exported_keys``; None: all). Each piece is made
    as the writer takes it: no piece larger than one part, so no single serialisation holds
    the GIL, and so the event loop, for long (docs/performance.md)."""
    head = {
        "version": STATE_VERSION,
        "saved_at": saved_at,
        # first, and small: what a file cut short or damaged further on still says (``salvage``)
        "cursors": {name: led.cursor for name, led in ledgers.items()},
        "count_keys": list(COUNT_KEYS),
        "exported_keys": dict(exported) if exported is not None else None,
    }
    yield _open(head) + ',"accounts":{'
    for i, (name, led) in enumerate(ledgers.items()):
        yield ("," if i else "") + encode_basestring_ascii(name) + ":"
        yield from _account(led)
    yield "}}"


def dump(
    ledgers: Mapping[str, AccountLedger],
    saved_at: float,
    exported: Mapping[str, list[str]] | None = None,
) -> bytes:
    """``pieces`` joined: the bytes of the whole file (tests, tools; the daemon writes the
    pieces with ``PartFile``)."""
    return "".join(
        p if isinstance(p, str) else p.make() for p in pieces(ledgers, saved_at, exported)
    ).encode()


def write_atomic(path: str, data: bytes) -> None:
    """Write to a temporary file, fsync, and rename over ``path`` (never half a file)."""
    write_atomic_with(path, lambda fh: fh.write(data))
