"""The self-metrics registry in the text format: ``generate_latest``'s bytes, cheaper per render.

``prometheus_client.generate_latest`` checks and escapes every label name and value and the
metric name of every sample at every render, though the same series come back each time
with new values only. ``TextRenderer`` keeps, per family and per series, the text before the
value as ``generate_latest`` itself wrote it (for a zero value, cut off), and writes the value
as it does. The output is the concatenation of one ``generate_latest``
per family, so a family the shortcut does not cover (a sample with a timestamp, OpenMetrics'
``_created``/``_gsum``/``_gcount`` samples moved to the end) is written by ``generate_latest``
whole, and the bytes are the same.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Iterable
from typing import cast

from prometheus_client import Metric, generate_latest
from prometheus_client.registry import Collector
from prometheus_client.samples import Sample
from prometheus_client.utils import floatToGoString

# the value as generate_latest writes it (prometheus-client ships it without annotations)
_value = cast(Callable[[float], str], floatToGoString)
_OPENMETRICS_ONLY = ("_created", "_gsum", "_gcount")  # generate_latest's own list
_ZERO = " " + _value(0.0) + "\n"

SeriesKey = tuple[str, tuple[tuple[str, str], ...]]


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
        for metric in self._registry.collect():
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
        self._headers, self._prefixes = headers, prefixes
        return "".join(out).encode("utf-8")


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
