"""The samples of one metric family in compact form: no object per sample.

Label values are kept as one tuple per series in a list (a tuple once the family is packed:
the garbage collector stops tracking a tuple of tuples of strings, but traverses a list on
every full collection), values in an ``array('d')`` (8 bytes a series instead of a float
object and a (labels, value) tuple: ~80 bytes less a series). A family is read as a sequence
of ``(labels, value)`` pairs, made on demand.

Label tuples are interned across refreshes: when a new fragment is packed against the one it
replaces (``exporter.exposition.pack``), each chunk whose label tuples equal the previous
ones takes the previous tuples over, so an unchanged set of series is held once however often
it is rebuilt, and the tuples a poll just built are freed. A family whose series come in a
different order each refresh (traffic gauges, ranked by traffic) is matched by group: each
resource's rows are looked for where that resource's rows were in the previous fragment.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Iterable, Iterator, MutableSequence, Sequence
from typing import overload

Sample = tuple[tuple[str, ...], float]


class Samples(Sequence[Sample]):
    """Label tuples and values of one family, in the order added."""

    __slots__ = ("_at", "_group", "_starts", "labels", "like", "values")

    def __init__(
        self, samples: Iterable[Sample] = (), like: Samples | None = None, group: int | None = None
    ) -> None:
        self.labels: MutableSequence[tuple[str, ...]] | tuple[tuple[str, ...], ...] = []
        self.values: array[float] = array("d")
        # The same family in the fragment this one replaces: a label tuple equal to the one at
        # the same position there is taken over as it is added, so the tuple just built is
        # freed at once instead of living until packing (at 5,000 resources ~45 MB of peak).
        # Dropped when packed.
        self.like = like
        # ``group``: the label whose value keeps a run of series together (a resource's id);
        # a tuple not at the next place in ``like`` is looked for in its group's run there.
        self._group = group
        self._at = 0  # the place in ``like`` the next tuple is compared with
        self._starts: dict[str, int] | None = None  # where each group's run starts in ``like``
        for sample in samples:
            self.append(sample)

    def append(self, sample: Sample) -> None:
        """Add one ``(labels, value)`` pair (the pair itself is not kept)."""
        labels, value = sample
        if isinstance(self.labels, tuple):
            raise TypeError("samples are frozen once packed (labels kept in a tuple)")
        if self.like is not None:
            labels = self._take_over(self.like.labels, labels)
        self.labels.append(labels)
        self.values.append(value)

    def _take_over(
        self, prev: Sequence[tuple[str, ...]], labels: tuple[str, ...]
    ) -> tuple[str, ...]:
        """The tuple of ``prev`` equal to ``labels`` (at the next place, or in its group's
        run), else ``labels`` itself."""
        i = self._at if self._group is not None else len(self.labels)
        if i < len(prev) and prev[i] == labels:
            self._at = i + 1
            return prev[i]
        g = self._group
        if g is None or len(labels) <= g:
            return labels
        if self._starts is None:
            self._starts = _group_starts(prev, g)
        key = labels[g]
        j = self._starts.get(key)
        while j is not None and j < len(prev) and len(prev[j]) > g and prev[j][g] == key:
            if prev[j] == labels:
                self._at = j + 1
                return prev[j]
            j += 1
        return labels

    def release(self) -> None:
        """Stop referring to the previous fragment's samples (once packed)."""
        self.like = None
        self._starts = None

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


def _group_starts(labels: Sequence[tuple[str, ...]], g: int) -> dict[str, int]:
    """The first place of each value of label ``g`` in ``labels``."""
    starts: dict[str, int] = {}
    last: str | None = None
    for j, t in enumerate(labels):
        if len(t) > g and t[g] != last:
            last = t[g]
            starts.setdefault(last, j)
    return starts
