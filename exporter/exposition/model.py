"""Metric specs and immutable fragments of samples, with their text-format rendering."""

from __future__ import annotations

import re
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Literal

from exporter.exposition.deflate import Piece
from exporter.exposition.formats import Format, escape_help
from exporter.exposition.lines import Lines, Texts
from exporter.exposition.pack import CHUNK_LINES, pack_family
from exporter.exposition.samples import Sample, Samples

_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
_LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
MetricType = Literal["gauge", "counter"]


@dataclass(frozen=True)
class MetricSpec:
    """One metric family: its name (counters end in ``_total``), type, help and label names.

    ``unit`` and ``source`` feed the generated metric reference (docs/metrics.md).
    """

    name: str
    type: MetricType
    help: str
    labels: tuple[str, ...] = ()
    unit: str = ""
    source: str = ""

    def __post_init__(self) -> None:
        if not _NAME.fullmatch(self.name):
            raise ValueError(f"{self.name!r} is not a valid metric name")
        if self.type == "counter" and not self.name.endswith("_total"):
            raise ValueError(f"counter {self.name} must end in _total")
        if self.type != "counter" and self.name.endswith("_total"):
            raise ValueError(f"{self.type} {self.name} must not end in _total (promtool lint)")
        for label in self.labels:
            if not _LABEL.fullmatch(label) or label.startswith("__"):
                raise ValueError(f"{self.name}: {label!r} is not a valid label name")
        if len(set(self.labels)) != len(self.labels):
            raise ValueError(f"{self.name}: duplicate label names {self.labels}")

    def header(self, fmt: Format = "text") -> bytes:
        """The HELP and TYPE lines in ``fmt``; an OpenMetrics counter family is named without
        its samples' ``_total``."""
        name = self.name
        if fmt == "openmetrics" and self.type == "counter":
            name = name.removesuffix("_total")
        help_text = escape_help(self.help, fmt)
        return f"# HELP {name} {help_text}\n# TYPE {name} {self.type}\n".encode()


def render_samples(spec: MetricSpec, samples: Iterable[Sample]) -> bytes:
    """Sample lines of one family, without HELP/TYPE."""
    return b"".join(render_chunks(spec, samples))


def render_chunks(
    spec: MetricSpec, samples: Iterable[Sample], lines: int = CHUNK_LINES
) -> Iterator[bytes]:
    """The sample lines of one family, ``lines`` at a time (so a family of 100,000 series is
    compressed without its whole text in memory at once). Label texts are memoised for this
    call (``lines.Lines``). See docs/performance.md#each-fragment-compressed-once-gzip-pieces-joined
    and docs/performance.md#a-familys-pieces-joined-as-one-run.
    """
    render = Lines(spec.name, spec.labels).render
    labels: list[tuple[str, ...]] = []
    values: array[float] = array("d")
    for label_values, value in samples:
        labels.append(label_values)
        values.append(value)
        if len(labels) >= lines:
            yield render(labels, values)
            labels.clear()
            del values[:]
    if labels:
        yield render(labels, values)


class Fragment:
    """The samples one poll produced for several families; never changed after creation
    (except that equal label tuples may be swapped for the previous fragment's, see
    ``pack``).

    Samples are stored compactly (``samples.Samples``: label tuples and an array of values).
    The fragment is rendered and compressed at most once (``packed``, in a worker thread),
    against the fragment it replaces so that unchanged chunks keep their pieces; only the
    compressed text is kept: the plain text, many times larger, is not held in memory.
    """

    __slots__ = ("_packed", "carry", "samples")

    def __init__(
        self, samples: Mapping[MetricSpec, Iterable[Sample]], carry: object = None
    ) -> None:
        self.samples: Mapping[MetricSpec, Samples] = {
            spec: rows if isinstance(rows, Samples) else Samples(rows)
            for spec, rows in samples.items()
        }
        self._packed: dict[MetricSpec, tuple[Piece, ...]] | None = None
        # what the builder of this fragment hands to the build of the next one of the same
        # key (``traffic.blocks.Carry``); opaque here
        self.carry = carry

    def rendered(self) -> dict[MetricSpec, bytes]:
        """The sample lines of each family that has samples (rendered anew on each call)."""
        return {spec: render_samples(spec, rows) for spec, rows in self.samples.items() if rows}

    def packed(self, previous: Fragment | None = None) -> dict[MetricSpec, tuple[Piece, ...]]:
        """The rendered families, each compressed as joinable pieces (one per chunk);
        computed once. ``previous``: the fragment this one replaces (same area and account),
        whose pieces are kept for chunks that did not change."""
        packed = self._packed
        if packed is None:
            before = previous.samples if previous is not None else {}
            pieces = previous._packed if previous is not None and previous._packed else {}
            texts = Texts()  # label texts shared by the families
            packed = self._packed = {
                spec: pack_family(
                    Lines(spec.name, spec.labels, texts).render,
                    rows,
                    before.get(spec),
                    pieces.get(spec, ()),
                )
                for spec, rows in self.samples.items()
                if rows
            }
        return packed

    def value(self, spec: MetricSpec, **labels: str) -> float | None:
        """The value of the first sample matching ``labels`` (tests, landing page); None when
        absent. Labels not given match anything; a label the spec does not have is an error."""
        unknown = set(labels) - set(spec.labels)
        if unknown:
            raise ValueError(f"{spec.name} has no label(s) {sorted(unknown)}")
        want = tuple(labels.get(k) for k in spec.labels)
        for values, value in self.samples.get(spec, ()):
            if all(w is None or w == v for w, v in zip(want, values, strict=True)):
                return value
        return None

    def series_count(self) -> int:
        return sum(len(rows) for rows in self.samples.values())

    def nbytes(self, seen: set[int]) -> int:
        """Bytes of sample storage (label tuples in ``seen`` are not counted again)."""
        return sum(rows.nbytes(seen) for rows in self.samples.values())


class FragmentBuilder:
    """Collects samples family by family, then freezes them into a Fragment."""

    def __init__(self, wants: Callable[[str], bool] | None = None) -> None:
        self._rows: dict[MetricSpec, Samples] = {}
        self._wants = wants  # families it answers False for are not built (metrics.exclude)

    def add(self, spec: MetricSpec, labels: tuple[str, ...], value: float) -> None:
        if len(labels) != len(spec.labels):
            raise ValueError(f"{spec.name}: expected labels {spec.labels}, got {labels}")
        if self._wants is None or self._wants(spec.name):
            self._rows.setdefault(spec, Samples()).append((labels, float(value)))

    def declare(self, *specs: MetricSpec) -> None:
        """Make families known even when they have no samples yet."""
        for spec in specs:
            if self._wants is None or self._wants(spec.name):
                self._rows.setdefault(spec, Samples())

    def build(self) -> Fragment:
        return Fragment({spec: rows.copy() for spec, rows in self._rows.items()})
