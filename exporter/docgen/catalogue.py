"""Every metric family the exporter can expose, in one list (docs, dashboards and tests use it)."""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import Counter, Gauge, Histogram

from exporter.exposition import MetricSpec
from exporter.runtime.registry import declarations
from exporter.runtime.selfmetrics import SelfMetrics


@dataclass(frozen=True)
class Entry:
    """One family as documented: exposed name, type, labels, unit, source and help."""

    area: str
    name: str
    type: str
    labels: tuple[str, ...]
    unit: str
    source: str
    help: str


def _unit(name: str) -> str:
    for suffix, unit in (
        ("_bytes_per_second", "bytes/s"),
        ("_per_second", "1/s"),
        ("_timestamp_seconds", "Unix seconds"),
        ("_seconds", "seconds"),
        ("_bytes_total", "bytes"),
        ("_ratio", "ratio 0-1"),
    ):
        if name.endswith(suffix):
            return unit
    return ""


def _from_spec(area: str, spec: MetricSpec) -> Entry:
    return Entry(
        area,
        spec.name,
        spec.type,
        spec.labels,
        spec.unit or _unit(spec.name),
        spec.source,
        spec.help,
    )


def _self_entries() -> list[Entry]:
    metrics = SelfMetrics()
    out = []
    for attr in vars(metrics).values():
        if not isinstance(attr, Counter | Gauge | Histogram):
            continue
        # prometheus-client keeps these on the wrapper; there is no public accessor.
        name: str = attr._name
        labels: tuple[str, ...] = tuple(attr._labelnames)
        documentation: str = attr._documentation
        kind = {Counter: "counter", Gauge: "gauge", Histogram: "histogram"}[type(attr)]
        exposed = name + "_total" if kind == "counter" else name
        out.append(Entry("exporter", exposed, kind, labels, _unit(exposed), "", documentation))
    return out


def entries() -> list[Entry]:
    """All families, grouped by area in the registry's order, then the exporter's own."""
    out = [_from_spec(area.name, s) for area in declarations() for s in area.specs]
    out += _self_entries()
    return out


def names() -> set[str]:
    """Exposed family names (histograms without their _bucket/_sum/_count suffixes)."""
    return {e.name for e in entries()}
