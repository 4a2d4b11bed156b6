"""The traffic families' series laid out per resource: label tuples taken over from the
fragment before, values gathered by index.

A scope's ``Layout`` (the account's counters, a resource's counters, its gauges...) lists its
families as parts: the label values that follow the resource's own (``side``, ``code``...) and
where each series' value comes from (a key of the row's counts or gauges, and how it becomes the
value: a counter, per second, bytes from bits, a gauge as it is, the window's end). A build adds
a row per resource to a ``Scope``: its leading label values and its values in layout order,
gathered with one ``itemgetter`` (a key the row lacks, NaN, marks its series absent; a counter
held at 0, ``transform.Hold``, is read series by series). At the end each family takes its
slice of every row by maps over the rows.

The label tuples are not made again: a fragment carries where each of its scopes put each
resource's series (``Rows``, in ``Carry``, ``Fragment.carry``), and the next build of the
account takes a resource's tuples from there, by slicing the previous fragment's families,
when the resource comes back with the same leading labels (id, name, cname) and had every
series it has now, or the same ones. Only new or renamed resources, or those whose keys
changed, get new tuples. What is carried is the latest build's rows only (their leading labels
and, for rows lacking series, where each starts): nothing of the previous fragment, and
nothing of a resource that left; and nothing is taken over when the account or view differ.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import accumulate, chain, compress, repeat
from operator import itemgetter, truediv

from exporter.exposition import MetricSpec, Samples

LabelTuple = tuple[str, ...]
Pick = Callable[[Sequence[float]], tuple[float, ...]]
ValueOf = Callable[[int], "float | None"]  # a key's value; None: its series is left out

COUNTED = 0  # a counter (its value once shown, 0 while held)
PER_SECOND = 1  # a count divided by the window's seconds
BYTES = 2  # a bandwidth in bits/s, divided by 8
GAUGE = 3  # a gauge as it is
END = 4  # the window's end (no key)


@dataclass(frozen=True, slots=True)
class Part:
    """One family's series of a resource: the label values after the resource's, and the key
    each value is read from (in the row's counts or gauges, as ``source`` says)."""

    spec: MetricSpec
    source: int
    tails: tuple[LabelTuple, ...]
    keys: tuple[int, ...]


def pick(keys: Sequence[int]) -> Pick:
    """The values at ``keys``, as a tuple whatever their number."""
    if len(keys) == 1:
        key = keys[0]
        return lambda values: (values[key],)
    if not keys:
        return lambda values: ()
    return itemgetter(*keys)


class Layout:
    """The parts of one scope ordered by source (counts, then gauges, then the window's end),
    and where each part's series are in a resource's label tuples and values (``spans``)."""

    __slots__ = ("_bytes", "_end", "counts", "gauges", "parts", "size", "spans")

    def __init__(self, parts: Sequence[Part]) -> None:
        self.parts = tuple(sorted(parts, key=lambda p: p.source))
        spans, at = [], 0
        for p in self.parts:
            spans.append((at, at + len(p.tails)))
            at += len(p.tails)
        self.spans = tuple(spans)
        self.size = at
        keys = {s: [k for p in self.parts if p.source == s for k in p.keys] for s in range(END)}
        self.counts = pick(keys[COUNTED] + keys[PER_SECOND])
        self.gauges = pick(keys[BYTES] + keys[GAUGE])
        self._bytes = len(keys[BYTES])
        self._end = any(p.source == END for p in self.parts)

    def rates(
        self, counts: tuple[float, ...], gauges: tuple[float, ...], seconds: float, end: float
    ) -> tuple[float, ...]:
        """A resource's gauge values in label order, from its picked counts and gauges."""
        bits, rest = gauges[: self._bytes], gauges[self._bytes :]
        return (
            *map(truediv, counts, repeat(seconds)),
            *map(truediv, bits, repeat(8.0)),
            *rest,
            *((end,) if self._end else ()),
        )


@dataclass(frozen=True, slots=True)
class Rows:
    """Where a build put each resource's series in its scope's families, for the next build
    to find them: ``heads``: each row's leading label values (the resource's id second);
    ``starts``: per part, the first series of each row and the end (None: every row has
    every series, row ``k`` of a part of ``L`` series starts at ``k * L``); ``masks``: the
    series present in each row that lacks some (``Scope.add``)."""

    heads: tuple[LabelTuple, ...]
    starts: tuple[array[int], ...] | None = None
    masks: Mapping[int, bytes] = field(default_factory=dict)

    def start(self, part: int, width: int) -> Sequence[int]:
        """The first series of each row in ``part`` (of ``width`` series a whole row), by
        row, and the end."""
        if self.starts is not None:
            return self.starts[part]
        return (
            range(0, width * len(self.heads) + 1, width) if width else [0] * (len(self.heads) + 1)
        )


class Scope:
    """One build's samples of a layout's families: a row per resource (its label values, its
    values in the layout's order and, when some are left out, which series are present);
    each family's slice of every row is taken at the end, by maps (``samples``). A row whose
    resource the previous build had whole, under the same leading labels, takes its label
    tuples from the previous fragment's families (``before``: where they are); the others get
    new ones."""

    __slots__ = ("_all", "_heads", "_present", "_values", "before", "layout", "masked")

    def __init__(self, layout: Layout, before: Rows | None = None) -> None:
        self.layout = layout
        self.before = before
        self._heads: list[LabelTuple] = []
        self._values: list[array[float]] = []
        self._present: list[Sequence[bool]] = []
        self._all = (True,) * layout.size
        self.masked = False  # some row leaves series out

    def add(
        self, head: LabelTuple, values: Sequence[float], present: Sequence[bool] | None = None
    ) -> None:
        """A resource's series (``head``: its label values; the resource's id second), in the
        layout's order; ``present``: those kept (all when None)."""
        self._heads.append(head)
        self._values.append(array("d", values))
        if present is not None:
            self.masked = True
        self._present.append(self._all if present is None else present)

    def add_each(self, head: LabelTuple, value_of: ValueOf) -> None:
        """A resource series by series: ``value_of`` gives each one's value, None to leave it
        out."""
        values: list[float] = []
        present: list[bool] = []
        for p in self.layout.parts:
            for key in p.keys:
                value = value_of(key)
                present.append(value is not None)
                values.append(0.0 if value is None else value)
        self.add(head, values, present)

    def _reused(self, before: Rows) -> list[int | None]:
        """Per row, the previous build's row it takes its tuples from (None: new ones): one of
        the same leading labels that had every series this one has, or the same ones."""
        index = {head[1]: k for k, head in enumerate(before.heads) if len(head) > 1}
        out: list[int | None] = []
        for head, present in zip(self._heads, self._present, strict=True):
            k = index.get(head[1]) if len(head) > 1 else None
            if k is not None and before.heads[k] == head:
                mask = before.masks.get(k)
                if mask is None or mask == bytes(present):
                    out.append(k)
                    continue
            out.append(None)
        return out

    def samples(
        self, previous: Mapping[MetricSpec, Samples]
    ) -> tuple[dict[MetricSpec, Samples], Rows]:
        """Each family's samples, and where each row's series are in them. ``previous``: the
        families of the fragment ``before`` describes."""
        parts, heads, before = self.layout.parts, self._heads, self.before
        olds = [previous.get(p.spec) for p in parts]
        reused: list[int | None] = [None] * len(heads)
        if before is not None and all(old is not None for old in olds):
            reused = self._reused(before)
        fresh = [h for h, k in zip(heads, reused, strict=True) if k is None]
        taken = before if before is not None and len(fresh) < len(heads) else None
        count = len(taken.heads) if taken is not None else 0
        virtual = []  # per row: its row among the previous ones, or past them among the new
        for k in reused:
            virtual.append(count if k is None else k)
            count += k is None
        # a row taken from one that lacked series has only the series it needs already
        filtered = [k is not None and k in taken.masks for k in reused] if taken else []
        out: dict[MetricSpec, Samples] = {}
        for n, (p, (a, b), old) in enumerate(zip(parts, self.layout.spans, olds, strict=True)):
            width = b - a
            flat: list[LabelTuple] = []
            starts: list[int] = []
            if taken is not None and old is not None:
                flat = list(old.labels)
                starts = list(taken.start(n, width))
            ends = starts[1:]
            starts = starts[:-1]
            starts += [len(flat) + width * j for j in range(len(fresh))]
            ends += [len(flat) + width * (j + 1) for j in range(len(fresh))]
            flat += [(*h, *t) for h in fresh for t in p.tails]
            cut = itemgetter(slice(a, b))
            labels: Iterable[Iterable[LabelTuple]] = map(
                flat.__getitem__,
                map(slice, map(starts.__getitem__, virtual), map(ends.__getitem__, virtual)),
            )
            values: Iterable[Iterable[float]] = map(cut, self._values)
            if self.masked:
                present = list(map(cut, self._present))
                labels = map(compress, labels, _selectors(filtered, present))
                values = map(compress, values, present)
            out[p.spec] = Samples.of_blocks(
                chain.from_iterable(labels), chain.from_iterable(values)
            )
        return out, self._rows()

    def _rows(self) -> Rows:
        if not self.masked:
            return Rows(tuple(self._heads))
        starts = tuple(
            array("q", accumulate(map(sum, map(itemgetter(slice(a, b)), self._present)), initial=0))
            for a, b in self.layout.spans
        )
        masks = {k: bytes(p) for k, p in enumerate(self._present) if p is not self._all}
        return Rows(tuple(self._heads), starts, masks)


def _selectors(filtered: Sequence[bool], present: list[Sequence[bool]]) -> Iterable[Iterable[bool]]:
    """Which of each row's label tuples to keep: those present, or all of a row whose
    tuples are only those already (``filtered``)."""
    if not filtered:
        return present
    return [repeat(True) if f else p for f, p in zip(filtered, present, strict=True)]


@dataclass(frozen=True, slots=True)
class Carry:
    """What a traffic fragment hands to the next build of its account (``Fragment.carry``):
    where each scope put its resources' series (``Rows`` by scope name), for the account and
    view it was built with (``key``)."""

    key: object
    scopes: Mapping[str, Rows]

    @staticmethod
    def of(carried: object, key: object) -> Mapping[str, Rows]:
        """The scopes of ``carried`` when it is a ``Carry`` of ``key``, else none."""
        if isinstance(carried, Carry) and carried.key == key:
            return carried.scopes
        return {}
