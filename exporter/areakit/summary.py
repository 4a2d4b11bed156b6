"""What an area's landing summary is read from: its latest fragment for the account
(``published``), read through its own MetricSpecs; a family left out by
``metrics.include``/``exclude`` is never built, so a figure that needs one is reported as
``left_out`` (the family names) rather than read as "nothing wrong"."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from exporter.exposition import FamilySelection, Fragment, MetricSpec, Store, StoreKey


@dataclass(frozen=True)
class Published:
    """An area's latest fragment for the account: whether there is one and if it is stale."""

    fragment: Fragment | None
    stale: bool

    @property
    def known(self) -> bool:
        return self.fragment is not None

    def rows(self, spec: MetricSpec) -> list[tuple[dict[str, str], float]]:
        """Every sample of ``spec`` as (labels by name, value)."""
        if self.fragment is None:
            return []
        return [
            (dict(zip(spec.labels, values, strict=True)), value)
            for values, value in self.fragment.samples.get(spec, ())
        ]

    def value(self, spec: MetricSpec, **labels: str) -> float | None:
        return None if self.fragment is None else self.fragment.value(spec, **labels)


def published(store: Store, key: StoreKey) -> Published:
    fresh = store.fragment(key)
    if fresh is not None:
        return Published(fresh, False)
    old = store.fragment(key, include_stale=True)
    return Published(old, old is not None)


def left_out(selection: FamilySelection, specs: Sequence[MetricSpec]) -> tuple[str, ...]:
    return tuple(s.name for s in specs if not selection.wants(s.name))
