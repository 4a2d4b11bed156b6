"""The self-metrics registry in the text format: ``generate_latest``'s bytes, cheaper per render.

``prometheus_client.generate_latest`` checks and escapes every label name and value and the
metric name of every sample at every render, though the same series come back each time
with new values only. ``TextRenderer`` keeps, per family and per series, the text before the
value as ``generate_latest`` itself wrote it (for a zero value, cut off), and writes the value
as it does. The output is the concatenation of one ``generate_latest``
per family, so a family the shortcut does not cover (a sample with a timestamp, OpenMetrics'
``_created``/``_gsum``/``_gcount`` samples moved to the end) is written by ``generate_latest``
whole, and the bytes are the same.

A plain ``Counter`` or ``Gauge`` of a ``CollectorRegistry`` (most of the self-metrics) is read
from its objects directly (each series' label values and value), without the ``Metric`` and the
``Sample`` per series its ``collect`` builds; anything else (a histogram, a custom collector, a
gauge set from a function, counters with ``_created``) goes through ``collect``.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Iterable
from typing import Any, cast

from prometheus_client import CollectorRegistry, Counter, Gauge, Metric, generate_latest
from prometheus_client import metrics as client_metrics
from prometheus_client.registry import Collector
from prometheus_client.samples import Sample
from prometheus_client.utils import floatToGoString

# the value as generate_latest writes it (prometheus-client ships it without annotations)
_value = cast(Callable[[float], str], floatToGoString)
_OPENMETRICS_ONLY = ("_created", "_gsum", "_gcount")  # generate_latest's own list
_ZERO = " " + _value(0.0) + "\n"

SeriesKey = tuple[str, tuple[tuple[str, str], ...] | tuple[str, ...]]
Series = list[tuple[tuple[str, ...], float]]


class _One(Collector):
    """One family, as a registry ``generate_latest`` renders."""

    def __init__(self, metric: Metric) -> None:
        self._metric = metric

    def collect(self) -> Iterable[Metric]:
        return [self._metric]


def _alone(metric: Metric) -> str:
    return generate_latest(_One(metric)).decode("utf-8")


class TextRenderer:
    """``generate_latest(registry)``, byte for byte; the text around the values is kept from
    the render before (only the series still there are kept)."""

    def __init__(self, registry: Collector) -> None:
        self._registry = registry
        self._headers: dict[tuple[str, str, str], str] = {}
        self._prefixes: dict[SeriesKey, str] = {}

    def render(self) -> bytes:
        out: list[str] = []
        headers: dict[tuple[str, str, str], str] = {}
        prefixes: dict[SeriesKey, str] = {}
        for collector in self._collectors():
            read = _series(collector)
            if read is None:
                for metric in collector.collect():
                    self._family(metric, out, headers, prefixes)
                continue
            name, series = read
            # prometheus-client ships these attributes without annotations
            c = cast(Any, collector)
            hkey = (c._name, c._type, c._documentation)
            header = headers[hkey] = self._headers.get(hkey) or _header(c.describe()[0])
            out.append(header)
            for values, value in series:
                key = (name, values)
                prefix = prefixes[key] = self._prefixes.get(key) or _prefix(
                    c.describe()[0],
                    Sample(name, dict(zip(c._labelnames, values, strict=True)), 0.0),
                )
                out.append(prefix)
                out.append(_value(value))
                out.append("\n")
        self._headers, self._prefixes = headers, prefixes
        return "".join(out).encode("utf-8")

    def _collectors(self) -> list[Collector]:
        """What ``collect`` of the registry goes through, in its order: its collectors (a
        registry with ``target_info``, or any other collector, as one)."""
        registry = self._registry
        if type(registry) is not CollectorRegistry or registry._target_info:
            return [registry]
        with registry._lock:
            return list(registry._collector_to_names)

    def _family(
        self,
        metric: Metric,
        out: list[str],
        headers: dict[tuple[str, str, str], str],
        prefixes: dict[SeriesKey, str],
    ) -> None:
        hkey = (metric.name, metric.type, metric.documentation)
        header = headers[hkey] = self._headers.get(hkey) or _header(metric)
        start = len(out)
        out.append(header)
        moved = _moved(metric.name)
        for s in metric.samples:
            if s.timestamp is not None or s.name in moved:  # generate_latest's own way
                del out[start:]
                out.append(_alone(metric))
                break
            key = (s.name, tuple(s.labels.items()))
            prefix = prefixes[key] = self._prefixes.get(key) or _prefix(metric, s)
            out.append(prefix)
            out.append(_value(s.value))
            out.append("\n")


def _series(collector: Collector) -> tuple[str, Series] | None:
    """A plain ``Counter`` (without ``_created``) or ``Gauge``'s sample name and series (label
    values, value) as its ``collect`` gives them, read from its objects; None for any other
    collector, or one whose values come from a function (``set_function``)."""
    kind = type(collector)
    if kind is Gauge:
        suffix = ""
    elif kind is Counter and not client_metrics._use_created:
        suffix = "_total"
    else:
        return None
    c = cast(Any, collector)
    if "_child_samples" in vars(c) or c._labelvalues:  # a function's value; a child
        return None
    if not c._labelnames:
        return c._name + suffix, [((), c._value.get())]
    with c._lock:
        children = list(c._metrics.items())
    series: Series = []
    for values, child in children:
        if "_child_samples" in vars(child):
            return None
        series.append((values, child._value.get()))
    return c._name + suffix, series


@functools.lru_cache(maxsize=1024)
def _moved(name: str) -> tuple[str, ...]:
    """The names of a family's samples that generate_latest moves to the end (OpenMetrics'
    ``_created``, ``_gsum``, ``_gcount``, as gauges of their own)."""
    return tuple(name + suffix for suffix in _OPENMETRICS_ONLY)


def _header(metric: Metric) -> str:
    """The family's ``# HELP`` and ``# TYPE`` lines."""
    return _alone(_like(metric, []))


def _prefix(metric: Metric, sample: Sample) -> str:
    """The sample's line up to its value (name, labels, space)."""
    text = _alone(_like(metric, [Sample(sample.name, sample.labels, 0.0)]))
    line = text[len(_header(metric)) :]
    if not line.endswith(_ZERO):  # never: generate_latest writes the value last
        raise ValueError(f"unexpected sample line {line!r}")
    return line[: -len(_ZERO) + 1]


def _like(metric: Metric, samples: list[Sample]) -> Metric:
    like = copy.copy(metric)
    like.samples = samples
    return like
