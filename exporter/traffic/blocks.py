"""The traffic families' series laid out per resource: label tuples made once and kept across
builds, values gathered by index.

A scope's ``Layout`` (the account's counters, a resource's counters, its gauges...) lists its
families as parts: the label values that follow the resource's own (``side``, ``code``...) and
where each series' value comes from (a key of the row's counts or gauges, and how it becomes the
value: a counter, per second, bytes from bits, a gauge as it is, the window's end). Every
resource follows its scope's layout, so its label tuples are one tuple, made when it is first
built and kept in the account's ``Blocks``, which a fragment carries to the next build of the
same account (``Fragment.carry``): a build that sees the same resource with the same name and
cname takes those tuples as they are (the same objects: the fragment holds no second copy),
gathers the resource's values with one ``itemgetter`` per row, and adds each family's slice of
both at once (``Scope``; a key the row lacks, NaN, leaves its series out). A resource
with a counter held at 0 (``families.Hold``) is added series by series from the same tuples
(``Scope.add_each``).

``Blocks`` holds the resources of the latest build only: a resource that left, or every
resource when the view or account differ, is not carried to the next.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from itertools import chain, compress, repeat
from operator import itemgetter, truediv

from exporter.exposition import MetricSpec, Samples

LabelTuple = tuple[str, ...]
Block = tuple[LabelTuple, ...]  # one resource's label tuples, in its layout's order
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

    def labels(self, head: LabelTuple) -> Block:
        """A resource's label tuples: ``head`` followed by each series' tail."""
        return tuple((*head, *tail) for p in self.parts for tail in p.tails)

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


class Scope:
    """One build's samples of a layout's families: a row per resource (its label tuples, its
    values and, when some are left out, which series are present); each family's slice of
    every row is taken at the end, by maps (``samples``)."""

    __slots__ = ("_all", "_labels", "_present", "_values", "layout", "masked")

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self._labels: list[Block] = []
        self._values: list[array[float]] = []
        self._present: list[Sequence[bool]] = []
        self._all = (True,) * layout.size
        self.masked = False  # some row leaves series out

    def add(
        self, labels: Block, values: Sequence[float], present: Sequence[bool] | None = None
    ) -> None:
        """A resource's series, in the layout's order; ``present``: those kept (all when
        None)."""
        self._labels.append(labels)
        self._values.append(array("d", values))
        if present is not None:
            self.masked = True
        self._present.append(self._all if present is None else present)

    def add_each(self, labels: Block, value_of: ValueOf) -> None:
        """A resource series by series: ``value_of`` gives each one's value, None to leave it
        out."""
        values: list[float] = []
        present: list[bool] = []
        for p in self.layout.parts:
            for key in p.keys:
                value = value_of(key)
                present.append(value is not None)
                values.append(0.0 if value is None else value)
        self.add(labels, values, present)

    def samples(self) -> dict[MetricSpec, Samples]:
        """Each family's samples (its label tuples are kept by ``Blocks``, ``Samples.kept``)."""
        out: dict[MetricSpec, Samples] = {}
        for p, (a, b) in zip(self.layout.parts, self.layout.spans, strict=True):
            cut = itemgetter(slice(a, b))
            labels: Iterable[Iterable[LabelTuple]] = map(cut, self._labels)
            values: Iterable[Iterable[float]] = map(cut, self._values)
            if self.masked:
                present = list(map(cut, self._present))
                labels = map(compress, labels, present)
                values = map(compress, values, present)
            out[p.spec] = Samples.of_blocks(
                chain.from_iterable(labels), chain.from_iterable(values)
            )
        return out


class Blocks:
    """One account's resources' label tuples from its latest build, by resource id: its
    counters', its info series' and its gauges' (with the name and cname they carry)."""

    __slots__ = ("_before", "counted", "gauged", "info", "key")

    def __init__(self, key: Hashable, before: object = None) -> None:
        """``before``: what the fragment replaced carried; its blocks are taken over when it
        is a ``Blocks`` of the same ``key`` (account and view)."""
        self.key = key
        self.counted: dict[str, Block] = {}
        self.info: dict[str, LabelTuple] = {}
        self.gauged: dict[str, tuple[str, str, Block]] = {}
        self._before = before if isinstance(before, Blocks) and before.key == key else None

    def counted_block(self, layout: Layout, head: LabelTuple) -> Block:
        key = head[1]
        old = self._before.counted.get(key) if self._before is not None else None
        block = self.counted[key] = old if old is not None else layout.labels(head)
        return block

    def info_labels(self, labels: LabelTuple) -> LabelTuple:
        key = labels[1]
        old = self._before.info.get(key) if self._before is not None else None
        kept = self.info[key] = old if old == labels and old is not None else labels
        return kept

    def gauged_block(self, layout: Layout, head: LabelTuple) -> Block:
        """``head``: account, resource id, name, cname."""
        key, name, cname = head[1:4]
        old = self._before.gauged.get(key) if self._before is not None else None
        if old is not None and old[0] == name and old[1] == cname:
            self.gauged[key] = old
            return old[2]
        block = layout.labels(head)
        self.gauged[key] = (name, cname, block)
        return block

    def done(self) -> None:
        """Stop referring to the blocks this one took over (the previous build's)."""
        self._before = None
