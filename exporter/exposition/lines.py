"""The sample lines of one family, a chunk at a time, with the per-series work done in C.

A line is ``name{k1="v1",...,kn="vn"} value``. Label values repeat a lot (one resource's
account, id, name and cname on each of its series; a handful of sides and codes), so a line is
joined from three memoised texts instead of being formatted: the text of all labels but the last
two (``name{k1="v1",...,``, one per resource), the text of the last but one label and that of
the last one (with ``"} ``), each looked up by ``map`` over the chunk's label tuples. Values are
written by ``repr`` over the whole chunk at once, whole numbers then losing their ``.0`` by one
``str.replace``; a chunk with a value that needs more (NaN, an infinity, ``-0.0``, a magnitude
of ``1e15`` or more) is written value by value. The text is ``model.format_value``'s, byte for
byte (``tests/exposition/test_lines.py`` compares it with the line by line rendering).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Hashable, Sequence
from operator import itemgetter
from typing import TypeVar

K = TypeVar("K", bound=Hashable)
_LIMIT = 1e15  # whole values below it are written as integers (``format_value``)
_BUT_TWO = itemgetter(slice(None, -2))
_LAST_BUT_ONE = itemgetter(-2)
_LAST = itemgetter(-1)


def format_value(value: float) -> str:
    """A value in the text format: whole numbers below 1e15 as integers, NaN, +Inf, -Inf,
    anything else as ``repr`` writes it."""
    if value != value:  # NaN
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == int(value) and abs(value) < _LIMIT:
        return str(int(value))
    return repr(float(value))


def value_text(value: float) -> str:
    """``format_value``, quicker for the common case (a float)."""
    if value.__class__ is float and value.is_integer() and -_LIMIT < value < _LIMIT:
        return str(int(value))
    return format_value(value)


def escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


class Memo(dict[K, str]):
    """Texts made on first use by ``make``; read with ``map(memo.__getitem__, keys)``, so only
    a key not seen before costs a Python call."""

    __slots__ = ("_make",)

    def __init__(self, make: Callable[[K], str]) -> None:
        super().__init__()
        self._make = make

    def __missing__(self, key: K) -> str:
        text = self[key] = self._make(key)
        return text


def values_text(values: array[float]) -> list[str]:
    """The text of each value followed by a newline, as ``format_value`` writes it."""
    count = len(values)
    if not count:
        return []
    total = sum(values)
    if total - total == 0.0:  # no NaN, no infinity
        whole = sum(map(float.is_integer, values))
        if whole == 0:  # no value to write as an integer
            return ("\n".join(map(float.__repr__, values)) + "\n").splitlines(keepends=True)
        if max(map(abs, values)) < _LIMIT:
            if whole == count:
                return ("\n".join(map(str, map(int, values))) + "\n").splitlines(keepends=True)
            text = ("\n".join(map(float.__repr__, values)) + "\n").replace(".0\n", "\n")
            if "-0\n" not in text:  # -0.0 is written 0
                return text.splitlines(keepends=True)
    return [value_text(v) + "\n" for v in values]


class Texts:
    """The memoised texts of label values, shared by the families of one render: per label
    name, its text inside a line (``k="v",``) and at its end (``k="v"} ``), and per run of
    leading label names, the text of their values (``k1="v1",k2="v2",``), which families of
    the same leading labels (a resource's gauges, its counters) have in common."""

    __slots__ = ("_inner", "_last", "_runs")

    def __init__(self) -> None:
        self._inner: dict[str, Memo[str]] = {}
        self._last: dict[str, Memo[str]] = {}
        self._runs: dict[tuple[str, ...], Memo[tuple[str, ...]]] = {}

    def inner(self, key: str) -> Memo[str]:
        memo = self._inner.get(key)
        if memo is None:
            memo = self._inner[key] = Memo(lambda v: f'{key}="{escape(v)}",')
        return memo

    def last(self, key: str) -> Memo[str]:
        memo = self._last.get(key)
        if memo is None:
            memo = self._last[key] = Memo(lambda v: f'{key}="{escape(v)}"}} ')
        return memo

    def run(self, keys: tuple[str, ...]) -> Memo[tuple[str, ...]]:
        memo = self._runs.get(keys)
        if memo is None:
            inner = [self.inner(k) for k in keys]
            memo = self._runs[keys] = Memo(
                lambda values: "".join([m[v] for m, v in zip(inner, values, strict=True)])
            )
        return memo


class Lines:
    """Renders chunks of one family's samples: a line is the family's name and ``{``, the
    text of all labels but the last two (looked up by their values), of the last but one
    and of the last, and the value's."""

    __slots__ = ("_bare", "_count", "_inner", "_last", "_open", "_run")

    def __init__(self, name: str, labels: Sequence[str], texts: Texts | None = None) -> None:
        texts = texts if texts is not None else Texts()
        self._count = len(labels)
        self._bare = name + " "
        self._open = name + "{"
        self._run = texts.run(tuple(labels[:-2]))
        self._inner = texts.inner(labels[-2]) if len(labels) > 1 else None
        self._last = texts.last(labels[-1]) if labels else None

    def render(self, labels: Sequence[tuple[str, ...]], values: array[float]) -> bytes:
        """The lines of ``labels[i]`` with ``values[i]``, one per pair."""
        texts = values_text(values)
        if self._last is None:
            return "".join(map(self._bare.__add__, texts)).encode()
        count = len(texts)
        parts: list[str] = [self._open] * (5 * count)
        if self._count > 2:
            parts[1::5] = list(map(self._run.__getitem__, map(_BUT_TWO, labels)))
        else:
            parts[1::5] = [""] * count
        if self._inner is not None:
            parts[2::5] = list(map(self._inner.__getitem__, map(_LAST_BUT_ONE, labels)))
        else:
            parts[2::5] = [""] * count
        parts[3::5] = list(map(self._last.__getitem__, map(_LAST, labels)))
        parts[4::5] = texts
        return "".join(parts).encode()
