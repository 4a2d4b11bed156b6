"""The samples of one metric family in compact form: no object per sample.

Label values are kept as one tuple per series, in chunks of ``CHUNK`` series (``Labels``),
values in an ``array('d')`` (8 bytes a series, no float object and no (labels, value) tuple).
A family is read as a sequence of ``(labels, value)`` pairs, made on demand.

Why chunks: the garbage collector visits every reference a young container holds, and a
collection stops every thread, the event loop's included. One list or tuple of all of a
large family's label tuples was visited whole each time a young or middle collection met it,
and the collections are triggered by whichever thread allocates, so the loop paid for the
worker thread building the family (docs/performance.md#label-tuples-in-chunks-of-2000). In chunks,
no container holds more than ``CHUNK`` references: each chunk is a tuple visited once while
young, after which the collector stops tracking it (a tuple of tuples of strings), and the
family holds a list of chunks (a tuple once packed).

Label tuples are interned across refreshes: when a new fragment is packed against the one it
replaces (``exporter.exposition.pack``), each chunk whose label tuples equal the previous
ones takes the previous tuples over, so an unchanged set of series is held once however often
it is rebuilt, and the tuples a poll just built are freed. A family whose series come in a
different order each refresh (traffic gauges, ranked by traffic) is matched by group: each
resource's rows are looked for where that resource's rows were in the previous fragment.
The traffic families take each resource's tuples from the previous fragment themselves
(``exporter.traffic.blocks``) and make their samples at once (``Samples.of_blocks``).
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Iterable, Iterator, Sequence
from itertools import chain, islice
from typing import overload

Sample = tuple[tuple[str, ...], float]
LabelTuple = tuple[str, ...]
Chunk = tuple[LabelTuple, ...]
CHUNK = 2000  # series per chunk; also the unit ``exporter.exposition.pack`` renders and compresses
FROZEN = "samples are frozen once packed (label chunks kept in a tuple)"


class Labels(Sequence[LabelTuple]):
    """Label tuples in order, held as chunks of ``CHUNK``: closed chunks are tuples, the one
    being filled a list. Every closed chunk but the last is full, so series ``i`` is in chunk
    ``i // CHUNK`` at ``i % CHUNK``. Frozen (``of_chunks``, a packed family): no more appends,
    the chunks in a tuple."""

    __slots__ = ("_closed", "_open", "chunks")

    def __init__(self) -> None:
        self._closed: list[Chunk] = []  # while open: the closed chunks, ``chunks`` itself
        self.chunks: Sequence[Chunk] = self._closed
        self._open: list[LabelTuple] | None = []  # the chunk being filled; None: frozen

    @classmethod
    def of_chunks(cls, chunks: Iterable[tuple[LabelTuple, ...]]) -> Labels:
        """Frozen labels of ``chunks`` (each full but the last)."""
        out = cls()
        out.chunks = tuple(chunks)
        out._closed = []
        out._open = None
        return out

    @classmethod
    def of_iterable(cls, items: Iterable[LabelTuple]) -> Labels:
        """Open labels of ``items``, in order."""
        out = cls()
        items = iter(items)
        while len(chunk := tuple(islice(items, CHUNK))) == CHUNK:
            out._closed.append(chunk)
        out._open = list(chunk)
        return out

    @property
    def frozen(self) -> bool:
        return self._open is None

    def append(self, labels: LabelTuple) -> None:
        held = self._open
        if held is None:
            raise TypeError(FROZEN)
        held.append(labels)
        if len(held) == CHUNK:  # the chunk being filled is full: it becomes a closed one
            self._closed.append(tuple(held))
            held.clear()

    def chunk(self, k: int) -> tuple[LabelTuple, ...]:
        """The label tuples of chunk ``k`` (``()`` past the end)."""
        if k < len(self.chunks):
            return self.chunks[k]
        if k == len(self.chunks) and self._open:
            return tuple(self._open)
        return ()

    def copy(self) -> Labels:
        """The same label tuples, open for appends."""
        out = Labels()
        closed = out._closed
        closed += self.chunks
        last = closed.pop() if closed and len(closed[-1]) < CHUNK else ()
        out._open = [*last, *(self._open or ())]
        return out

    def __len__(self) -> int:
        held, chunks = self._open, self.chunks
        if held is not None:
            return len(chunks) * CHUNK + len(held)
        return (len(chunks) - 1) * CHUNK + len(chunks[-1]) if chunks else 0

    def __iter__(self) -> Iterator[LabelTuple]:
        return chain(chain.from_iterable(self.chunks), self._open or ())

    @overload
    def __getitem__(self, index: int) -> LabelTuple: ...

    @overload
    def __getitem__(self, index: slice) -> list[LabelTuple]: ...

    def __getitem__(self, index: int | slice) -> LabelTuple | list[LabelTuple]:
        n = len(self)
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(n))]
        if index < 0:
            index += n
        if not 0 <= index < n:
            raise IndexError("label index out of range")
        k, i = divmod(index, CHUNK)
        if k < len(self.chunks):
            return self.chunks[k][i]
        return (self._open or [])[i]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Labels):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def nbytes(self) -> int:
        """Bytes of the containers (not of the label tuples)."""
        held = sys.getsizeof(self._open) if self._open is not None else 0
        return sys.getsizeof(self.chunks) + held + sum(sys.getsizeof(c) for c in self.chunks)


class Samples(Sequence[Sample]):
    """Label tuples and values of one family, in the order added."""

    __slots__ = ("_at", "_group", "_starts", "labels", "like", "values")

    def __init__(
        self, samples: Iterable[Sample] = (), like: Samples | None = None, group: int | None = None
    ) -> None:
        self.labels = Labels()
        self.values: array[float] = array("d")
        # The same family in the fragment this one replaces: a label tuple equal to the one at
        # the same position there is taken over as it is added, so the tuple just built is
        # freed at once instead of living until packing
        # (docs/performance.md#c-heaps-and-label-tuples-at-5000-resources).
        # Dropped when packed.
        self.like = like
        # ``group``: the label whose value keeps a run of series together (a resource's id);
        # a tuple not at the next place in ``like`` is looked for in its group's run there.
        self._group = group
        self._at = 0  # the place in ``like`` the next tuple is compared with
        self._starts: dict[str, int] | None = None  # where each group's run starts in ``like``
        for sample in samples:
            self.append(sample)

    @classmethod
    def of_blocks(cls, labels: Iterable[LabelTuple], values: Iterable[float]) -> Samples:
        """The samples of ``labels`` and ``values``, in order."""
        out = cls()
        out.labels = Labels.of_iterable(labels)
        out.values = array("d", values)
        if len(out.labels) != len(out.values):
            raise ValueError("as many label tuples as values expected")
        return out

    def append(self, sample: Sample) -> None:
        """Add one ``(labels, value)`` pair (the pair itself is not kept)."""
        labels, value = sample
        if self.like is not None:
            labels = self._take_over(self.like.labels, labels)
        self.labels.append(labels)
        self.values.append(value)

    def _take_over(self, prev: Labels, labels: LabelTuple) -> LabelTuple:
        """The tuple of ``prev`` equal to ``labels`` (at the next place, or in its group's
        run), else ``labels`` itself."""
        i = self._at if self._group is not None else len(self.values)
        # prev[i], read from its chunks directly: this runs once a series of every poll
        k, r = divmod(i, CHUNK)
        chunks = prev.chunks
        there: LabelTuple | None = None
        if k < len(chunks):
            part = chunks[k]
            if r < len(part):
                there = part[r]
        elif i < len(prev):
            there = prev[i]
        if there is not None and there == labels:
            self._at = i + 1
            return there
        g = self._group
        if g is None or len(labels) <= g:
            return labels
        if self._starts is None:
            self._starts = _group_starts(prev, g)
        key = labels[g]
        j = self._starts.get(key)
        while j is not None and j < len(prev):
            there = prev[j]
            if len(there) <= g or there[g] != key:
                break
            if there == labels:
                self._at = j + 1
                return there
            j += 1
        return labels

    def release(self) -> None:
        """Stop referring to the previous fragment's samples (once packed)."""
        self.like = None
        self._starts = None

    def copy(self) -> Samples:
        out = Samples()
        out.labels = self.labels.copy()
        out.values = array("d", self.values)
        return out

    def __len__(self) -> int:
        return len(self.values)

    def __iter__(self) -> Iterator[Sample]:
        return zip(self.labels, self.values, strict=True)

    @overload
    def __getitem__(self, index: int) -> Sample: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Sample]: ...

    def __getitem__(self, index: int | slice) -> Sample | Sequence[Sample]:
        if isinstance(index, slice):
            return list(zip(self.labels[index], self.values[index], strict=True))
        return self.labels[index], self.values[index]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Samples):
            return self.labels == other.labels and self.values == other.values
        if isinstance(other, Sequence):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Samples({list(self)!r})"

    def nbytes(self, seen: set[int]) -> int:
        """Bytes this family holds: the list, the array and each label tuple not in ``seen``
        (ids of tuples already counted; label strings are shared and not counted)."""
        size = self.labels.nbytes() + self.values.buffer_info()[1] * self.values.itemsize
        for labels in self.labels:
            if id(labels) not in seen:
                seen.add(id(labels))
                size += sys.getsizeof(labels)
        return size


def _group_starts(labels: Sequence[tuple[str, ...]], g: int) -> dict[str, int]:
    """The first place of each value of label ``g`` in ``labels``."""
    starts: dict[str, int] = {}
    last: str | None = None
    for j, t in enumerate(labels):
        if len(t) > g and t[g] != last:
            last = t[g]
            starts.setdefault(last, j)
    return starts
