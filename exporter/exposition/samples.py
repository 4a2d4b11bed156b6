"""The samples of one metric family in compact form: no object per sample.

Label values are kept as one tuple per series in a list (a tuple once the family is packed:
the garbage collector stops tracking a tuple of tuples of strings, but traverses a list on
every full collection), values in an ``array('d')`` (8 bytes a series instead of a float
object and a (labels, value) tuple: ~80 bytes less a series). A family is read as a sequence
of ``(labels, value)`` pairs, made on demand.

Label tuples are interned across refreshes: when a new fragment is packed against the one it
replaces (``exporter.exposition.pack``), each chunk whose label tuples equal the previous
ones takes the previous tuples over, so an unchanged set of series is held once however often
it is rebuilt, and the tuples a poll just built are freed.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Iterable, Iterator, MutableSequence, Sequence
from typing import overload

Sample = tuple[tuple[str, ...], float]


class Samples(Sequence[Sample]):
    """Label tuples and values of one family, in the order added."""

    __slots__ = ("labels", "like", "values")

    def __init__(self, samples: Iterable[Sample] = (), like: Samples | None = None) -> None:
        self.labels: MutableSequence[tuple[str, ...]] | tuple[tuple[str, ...], ...] = []
        self.values: array[float] = array("d")
        # The same family in the fragment this one replaces: a label tuple equal to the one at
        # the same position there is taken over as it is added, so the tuple just built is
        # freed at once instead of living until packing (at 5,000 resources ~45 MB of peak).
        # Dropped when packed.
        self.like = like
        for sample in samples:
            self.append(sample)

    def append(self, sample: Sample) -> None:
        """Add one ``(labels, value)`` pair (the pair itself is not kept)."""
        labels, value = sample
        if isinstance(self.labels, tuple):
            raise TypeError("samples are frozen once packed (labels kept in a tuple)")
        like = self.like
        if like is not None:
            i = len(self.labels)
            if i < len(like.labels) and like.labels[i] == labels:
                labels = like.labels[i]
        self.labels.append(labels)
        self.values.append(value)

    def copy(self) -> Samples:
        out = Samples()
        out.labels = list(self.labels)
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
        size = sys.getsizeof(self.labels) + self.values.buffer_info()[1] * self.values.itemsize
        for labels in self.labels:
            if id(labels) not in seen:
                seen.add(id(labels))
                size += sys.getsizeof(labels)
        return size
