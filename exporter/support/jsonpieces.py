"""JSON decoded and encoded a piece at a time, so the event loop keeps running meanwhile.

``json.loads`` and ``json.dumps`` are single C calls: they hold the GIL for their whole run,
long for a large reply or state file, so even in a worker thread they stop the event loop that
long. Here the outer containers are walked in Python and each element (a row or a series)
goes through the same C decoder or encoder on its own; between elements the interpreter may
hand the GIL to the loop. See docs/performance.md#json-a-piece-at-a-time.

Both give exactly the standard library's result (tests compare them on generated documents):

- ``loads(raw) == json.loads(raw)``: every element and scalar is parsed by
  ``JSONDecoder.raw_decode``; whatever the walk does not accept (other encodings, a
  byte-order mark, malformed text) goes to ``json.loads`` itself, which returns the same value
  or raises its usual error; ``loads_each`` hands the elements of one list to a function as
  they are decoded (a reply's rows parsed one by one, never all alive at once);
- ``dumps(value) == json.dumps(value, separators=(",", ":"), allow_nan=False)``: dicts with
  string keys are walked, lists when long or holding containers (short lists of numbers and
  strings are cheap to encode whole).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from json.encoder import encode_basestring_ascii
from sys import intern
from typing import Any

SPLIT_DEPTH = 2  # loads: containers at the top two levels are walked, deeper ones parsed whole
DUMPS_DEPTH = 6  # dumps: containers this deep are walked (the state file: account/runs/...)
LONG_LIST = 64  # dumps: lists longer than this, or holding containers, are walked
_DECODER = json.JSONDecoder()
_ENCODE = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode
_SPACE = re.compile(r"[ \t\n\r]*")


class _NotSimple(ValueError):
    """The walk does not accept this text; ``json.loads`` decides."""


# --- decoding -------------------------------------------------------------------------------
def loads(raw: bytes) -> Any:
    """``json.loads(raw)``, holding the GIL one element at a time."""
    try:
        text = raw.decode("utf-8")
        value, end = _value(text, _skip(text, 0), 0)
        if _skip(text, end) != len(text):
            raise _NotSimple("extra data")
    except (_NotSimple, UnicodeDecodeError, json.JSONDecodeError):
        return json.loads(raw)  # the same value, or json's own error
    return value


def loads_each(raw: bytes, key: str, each: Callable[[int, Any], Any]) -> Any:
    """``loads(raw)``, each element of the list under the top-level object's ``key`` replaced
    by ``each(index, element)`` as it is decoded: an element is dropped once ``each`` returned,
    so no element of that list outlives its own call.

    The same value as ``json.loads(raw)`` with ``value[key] = [each(i, e) for i, e in
    enumerate(value[key])]`` when the value is an object and ``value[key]`` a list (other
    values as ``json.loads`` gives them, its errors the same). ``each`` may meet the same
    elements twice (a walk that falls back to ``json.loads`` starts over), so it keeps no
    state of its own.
    """
    try:
        text = raw.decode("utf-8")
        i = _skip(text, 0)
        if text.startswith("{", i):
            value, end = _object(text, i + 1, 1, (key, each))
        else:
            value, end = _value(text, i, 0)
        if _skip(text, end) != len(text):
            raise _NotSimple("extra data")
    except (_NotSimple, UnicodeDecodeError, json.JSONDecodeError):
        value = json.loads(raw)  # the same value, or json's own error
        if type(value) is dict and type(value.get(key)) is list:
            value[key] = [each(n, item) for n, item in enumerate(value[key])]
    return value


Each = tuple[str, Callable[[int, Any], Any]]  # loads_each: the key, and what each element becomes


def _skip(text: str, i: int) -> int:
    match = _SPACE.match(text, i)
    return match.end() if match else i


def _value(text: str, i: int, depth: int) -> tuple[Any, int]:
    if depth < SPLIT_DEPTH and text.startswith("[", i):
        return _array(text, i + 1, depth + 1)
    if depth < SPLIT_DEPTH and text.startswith("{", i):
        return _object(text, i + 1, depth + 1)
    value, end = _DECODER.raw_decode(text, i)
    if type(value) is dict:
        # json shares equal keys within one call only: each element decoded on its own would
        # hold its own copies of the same keys, in every row of a reply. One shared copy of each
        # instead (docs/performance.md#memory-of-a-traffic-minute-read).
        value = {intern(k): v for k, v in value.items()}
    return value, end


def _array(text: str, i: int, depth: int) -> tuple[list[Any], int]:
    out: list[Any] = []
    i = _skip(text, i)
    if text.startswith("]", i):
        return out, i + 1
    while True:
        value, i = _value(text, i, depth)
        out.append(value)
        more, i = _after(text, i, "]")
        if not more:
            return out, i


def _each(text: str, i: int, each: Callable[[int, Any], Any]) -> tuple[list[Any], int]:
    """The list from just past its ``[``, each element as ``each`` makes it (``loads_each``)."""
    out: list[Any] = []
    i = _skip(text, i)
    if text.startswith("]", i):
        return out, i + 1
    decode, n = _DECODER.raw_decode, 0
    while True:
        value, i = decode(text, i)
        out.append(each(n, value))
        del value  # dropped before the next element is decoded
        n += 1
        more, i = _after(text, i, "]")
        if not more:
            return out, i


def _object(text: str, i: int, depth: int, each: Each | None = None) -> tuple[dict[str, Any], int]:
    out: dict[str, Any] = {}
    i = _skip(text, i)
    if text.startswith("}", i):
        return out, i + 1
    while True:
        if not text.startswith('"', i):
            raise _NotSimple("object key")
        key, i = _DECODER.raw_decode(text, i)
        i = _skip(text, i)
        if not text.startswith(":", i):
            raise _NotSimple("object colon")
        i = _skip(text, i + 1)
        if each is not None and key == each[0] and text.startswith("[", i):
            out[key], i = _each(text, i + 1, each[1])
        else:
            out[key], i = _value(text, i, depth)
        more, i = _after(text, i, "}")
        if not more:
            return out, i


def _after(text: str, i: int, close: str) -> tuple[bool, int]:
    """After an element: (True, start of the next one) or (False, just past ``close``)."""
    i = _skip(text, i)
    if text.startswith(",", i):
        return True, _skip(text, i + 1)
    if text.startswith(close, i):
        return False, i + 1
    raise _NotSimple(f"expected ',' or {close!r}")


# --- encoding -------------------------------------------------------------------------------
class Encoded(str):
    """A value's JSON text, encoded ahead (``encoded``): ``dumps`` puts it in as it is. A large
    document built of them holds short strings instead of its lists and numbers, a fraction of
    their memory. See docs/performance.md#memory-of-a-traffic-minute-read."""

    __slots__ = ()


def encoded(value: Any) -> Encoded:
    """``value`` encoded now, for a document that ``dumps`` encodes later."""
    return Encoded(_ENCODE(value))


def dumps(value: Any, depth: int = DUMPS_DEPTH) -> str:
    """``json.dumps(value, separators=(",", ":"), allow_nan=False)``, an element at a time
    (an ``Encoded`` value as the text it holds)."""
    kind = type(value)
    write = _SCALARS.get(kind)
    if write is not None:
        return write(value)
    if depth > 0 and kind is dict and all(type(k) is str for k in value):
        get, below = _SCALARS.get, depth - 1
        # scalars written here rather than by a call of dumps each (most of a document)
        items = ",".join(
            [
                f"{encode_basestring_ascii(k)}:"
                f"{w(v) if (w := get(type(v))) is not None else dumps(v, below)}"
                for k, v in value.items()
            ]
        )
        return "{" + items + "}"
    if depth > 0 and kind is list and (len(value) > LONG_LIST or _holds(value)):
        get, below = _SCALARS.get, depth - 1
        items = ",".join(
            [w(v) if (w := get(type(v))) is not None else dumps(v, below) for v in value]
        )
        return "[" + items + "]"
    return _ENCODE(value)


def scalar(value: Any) -> str:
    """A string, number, bool or None as ``dumps`` writes it."""
    write = _SCALARS.get(type(value))
    return write(value) if write is not None else _ENCODE(value)


def _literal(value: bool | None) -> str:
    return "null" if value is None else "true" if value else "false"


def _float(value: float) -> str:
    """As json writes a float; NaN and infinities refused with its own error."""
    return float.__repr__(value) if math.isfinite(value) else _ENCODE(value)


# Values of exactly these types are written as json.dumps writes them, without the set-up
# of its encoder at each call (an ``Encoded`` value as the text it holds).
_SCALARS: dict[type, Callable[[Any], str]] = {
    Encoded: str.__str__,
    str: encode_basestring_ascii,
    int: int.__repr__,
    float: _float,
    bool: _literal,
    type(None): _literal,
}


def _holds(items: list[Any]) -> bool:
    """Whether a list holds containers or ``Encoded`` texts (walked: they may be large, and an
    ``Encoded`` text would otherwise be encoded as a string)."""
    return any(type(v) in (dict, list, Encoded) for v in items)
