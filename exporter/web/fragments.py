"""Read published fragments by metric name (the web pages never import the areas' specs)."""

from __future__ import annotations

from exporter.exposition import Fragment, MetricSpec


def spec_named(fragment: Fragment | None, name: str) -> MetricSpec | None:
    if fragment is None:
        return None
    return next((s for s in fragment.samples if s.name == name), None)


def rows_named(fragment: Fragment | None, name: str) -> list[tuple[dict[str, str], float]]:
    """Every sample of the family ``name`` as (labels, value)."""
    spec = spec_named(fragment, name)
    if fragment is None or spec is None:
        return []
    return [
        (dict(zip(spec.labels, values, strict=True)), v) for values, v in fragment.samples[spec]
    ]


def value_named(fragment: Fragment | None, name: str, **labels: str) -> float | None:
    """The first sample of ``name`` matching ``labels``; None when there is none."""
    spec = spec_named(fragment, name)
    return None if fragment is None or spec is None else fragment.value(spec, **labels)
