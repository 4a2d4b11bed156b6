"""Which resources get series: include/exclude regexes, then the top N by edge traffic."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from exporter.traffic.parse import (
    COUNT_INDEX,
    GAUGE_INDEX,
    GAUGE_KEYS,
    ResourceRow,
    Row,
    add_into,
    blank,
)

_EDGE_BW = GAUGE_INDEX["edge_bandwidth"]
_ORIGIN_BW = GAUGE_INDEX["origin_bandwidth"]
_HIT_RATIO = GAUGE_INDEX["edge_hit_ratio"]
_EDGE_REQ = COUNT_INDEX["edge_requests_total"]


def edge_traffic(row: Row) -> tuple[float, float]:
    """Rank key: edge bandwidth, then edge requests (absent counts as 0)."""
    bw = row.gauges[_EDGE_BW]
    req = row.counts[_EDGE_REQ]
    return (bw if bw == bw else 0.0, req if req == req else 0.0)


def _rank(r: ResourceRow) -> tuple[float, float, str]:
    bw, req = edge_traffic(r.row)
    return (-bw, -req, r.id)


@dataclass(frozen=True, slots=True)
class Selection:
    """One window's resources: ``named`` get their own series (rank order), ``folded`` are
    summed into ``__other__``."""

    named: tuple[ResourceRow, ...]
    folded: tuple[ResourceRow, ...]

    @property
    def named_ids(self) -> frozenset[str] | None:
        """None when nothing was folded (every resource is named)."""
        return frozenset(r.id for r in self.named) if self.folded else None


class ResourceSelector:
    """Applies ``resources_include``/``resources_exclude`` (``re.search`` on the resource id or
    name) and ``max_resources`` (0 = no cap)."""

    def __init__(self, include: str, exclude: str, max_resources: int) -> None:
        self._include = re.compile(include or ".*")
        self._exclude = re.compile(exclude) if exclude else None
        self.max_resources = max_resources

    @property
    def folds(self) -> bool:
        return self.max_resources > 0

    @property
    def lists_all(self) -> bool:
        """Whether every resource a reply lists is kept (no include/exclude): then what the
        account totals hold beyond the resources is traffic the replies no longer list."""
        return self._include.pattern == ".*" and self._exclude is None

    def allowed(self, resource: str, name: str) -> bool:
        inc = self._include
        if not (inc.search(resource) or inc.search(name)):
            return False
        exc = self._exclude
        return exc is None or not (exc.search(resource) or exc.search(name))

    def filter(self, rows: Mapping[str, ResourceRow]) -> dict[str, ResourceRow]:
        return {rid: r for rid, r in rows.items() if self.allowed(r.id, r.name)}

    def select(self, rows: Iterable[ResourceRow]) -> Selection:
        """Rank by edge traffic (ties by id) and cut at max_resources."""
        ranked = sorted(rows, key=_rank)
        if not self.max_resources or len(ranked) <= self.max_resources:
            return Selection(tuple(ranked), ())
        return Selection(tuple(ranked[: self.max_resources]), tuple(ranked[self.max_resources :]))


def fold(rows: Iterable[ResourceRow]) -> Row:
    """The ``__other__`` row: counts and bandwidth summed, hit ratio weighted by edge
    bandwidth, medians absent (a median of medians would mislead)."""
    counts = blank()
    gauges = blank(len(GAUGE_KEYS))
    bw = [0.0, 0.0]
    hit_num = hit_den = 0.0
    seen_bw = [False, False]
    for r in rows:
        add_into(counts, r.row.counts)
        for k, i in enumerate((_EDGE_BW, _ORIGIN_BW)):
            v = r.row.gauges[i]
            if v == v:
                bw[k] += v
                seen_bw[k] = True
        ratio = r.row.gauges[_HIT_RATIO]
        edge = r.row.gauges[_EDGE_BW]
        if ratio == ratio and edge == edge:
            hit_num += ratio * edge
            hit_den += edge
    for k, i in enumerate((_EDGE_BW, _ORIGIN_BW)):
        if seen_bw[k]:
            gauges[i] = bw[k]
    if hit_den > 0:
        gauges[_HIT_RATIO] = hit_num / hit_den
    return Row(counts, gauges)
