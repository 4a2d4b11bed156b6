"""What a metrics read returns: late-data fractions, window aggregation and the reply's keys."""

from __future__ import annotations

import math
from array import array
from collections import OrderedDict
from collections.abc import Iterable, Sequence

from exporter.simulator.dataset import CdnResource
from exporter.simulator.traffic_model import (
    BYTES_PER_BPS_MINUTE,
    COUNT_END,
    COUNT_START,
    EDGE_2XX,
    EDGE_BW,
    EDGE_HIT_BYTES,
    EDGE_HIT_RATIO,
    EDGE_RT0,
    EDGE_STATUS0,
    N_COLS,
    ORIGIN_2XX,
    ORIGIN_BW,
    ORIGIN_RT0,
    ORIGIN_STATUS0,
    AccountTraffic,
)
from exporter.support.platform_fields import SIDES, SIZE_RANGES, STATUS_CODES

Value = int | float

# The flat key of every row column, in row order.
COLUMN_KEYS: tuple[str, ...] = (
    "edge_bandwidth",
    "origin_bandwidth",
    "edge_requests_total",
    "origin_requests_total",
    "edge_hit_bytes",
    *(f"edge_status_{c}" for c in STATUS_CODES),
    *(f"origin_status_{c}" for c in STATUS_CODES),
    *(f"edge_request_time_{r}" for r in SIZE_RANGES),
    *(f"origin_request_time_{r}" for r in SIZE_RANGES),
    "edge_hit_ratio",
)
assert len(COLUMN_KEYS) == N_COLS
# Reply order: bandwidth, requests, hit ratio and bytes, statuses, request times.
OUTPUT_COLUMNS: tuple[int, ...] = (
    EDGE_BW,
    ORIGIN_BW,
    2,
    3,
    EDGE_HIT_RATIO,
    EDGE_HIT_BYTES,
    *range(EDGE_STATUS0, N_COLS - 1),
)
_COLUMN_OF = {k: i for i, k in enumerate(COLUMN_KEYS)}
FAMILIES: dict[str, tuple[int, ...]] = {
    **{
        f"{s}_request_time": tuple(range(b, b + len(SIZE_RANGES)))
        for s, b in zip(SIDES, (EDGE_RT0, ORIGIN_RT0), strict=True)
    },
    **{
        f"{s}_status": tuple(range(b, b + len(STATUS_CODES)))
        for s, b in zip(SIDES, (EDGE_STATUS0, ORIGIN_STATUS0), strict=True)
    },
}
_RT_COLUMNS = {
    i: (f"{side}_request_time", rng)
    for side, base in zip(SIDES, (EDGE_RT0, ORIGIN_RT0), strict=True)
    for i, rng in zip(range(base, base + len(SIZE_RANGES)), SIZE_RANGES, strict=True)
}


def late_fraction(
    minute_start: int, now: float, late_seconds: float, half_seconds: float = 0.0
) -> float:
    """Share of a minute's final figures visible at `now`.

    Nothing before the minute starts; while it is open, a growing part of what is there
    at its close; 70% at the close, rising to 100% `late_seconds` after it. The missing 30%
    shrinks as (1 - age / late_seconds) ** k: k = 2 by default, or such that half of it has
    arrived `half_seconds` after the close (20 minutes with half 60 s: most in the first 2).
    """
    end = minute_start + 60
    early = 0.7 if late_seconds > 0 else 1.0
    if now <= minute_start:
        return 0.0
    if now < end:
        return early * (now - minute_start) / 60.0
    age = now - end
    if late_seconds <= 0 or age >= late_seconds:
        return 1.0
    x = 1.0 - age / late_seconds
    k = 2.0
    if 0 < half_seconds < late_seconds:
        k = math.log(0.5) / math.log(1.0 - half_seconds / late_seconds)
    return 1.0 - (1.0 - early) * float(x**k)


class WindowSum:
    """Adds (row, fraction) pairs: counts summed (each scaled and floored), bandwidth averaged
    over the window, hit ratio weighted by edge bytes, medians weighted by 2xx responses."""

    __slots__ = ("bw", "counts", "hit_den", "hit_num", "minutes", "rt", "w_edge", "w_origin")

    def __init__(self, minutes: int) -> None:
        self.minutes = minutes
        self.counts = [0] * (COUNT_END - COUNT_START)
        self.bw = [0.0, 0.0]
        self.hit_num = 0.0
        self.hit_den = 0.0
        self.rt = [0.0] * (2 * len(SIZE_RANGES))
        self.w_edge = 0.0
        self.w_origin = 0.0

    def add(self, row: array[float], f: float = 1.0) -> None:
        if f <= 0.0:
            return
        part = row[COUNT_START:COUNT_END]
        if f >= 1.0:
            f = 1.0
            self.counts = [a + int(b) for a, b in zip(self.counts, part, strict=True)]
        else:
            self.counts = [a + int(b * f) for a, b in zip(self.counts, part, strict=True)]
        self.bw[0] += row[EDGE_BW] * f
        self.bw[1] += row[ORIGIN_BW] * f
        self.hit_num += row[EDGE_HIT_BYTES] * f
        self.hit_den += row[EDGE_BW] * BYTES_PER_BPS_MINUTE * f
        w_e = row[EDGE_2XX] * f
        w_o = row[ORIGIN_2XX] * f
        if w_e:
            self.w_edge += w_e
            for i in range(len(SIZE_RANGES)):
                self.rt[i] += row[EDGE_RT0 + i] * w_e
        if w_o:
            self.w_origin += w_o
            n = len(SIZE_RANGES)
            for i in range(n):
                self.rt[n + i] += row[ORIGIN_RT0 + i] * w_o

    def values(self) -> list[Value]:
        """Unrounded figures in row layout (counts are ints)."""
        out: list[Value] = [0.0] * N_COLS
        out[EDGE_BW] = self.bw[0] / self.minutes
        out[ORIGIN_BW] = self.bw[1] / self.minutes
        out[COUNT_START:COUNT_END] = self.counts
        n = len(SIZE_RANGES)
        we, wo = self.w_edge, self.w_origin
        out[EDGE_RT0 : EDGE_RT0 + n] = [x / we if we else 0.0 for x in self.rt[:n]]
        out[ORIGIN_RT0 : ORIGIN_RT0 + n] = [x / wo if wo else 0.0 for x in self.rt[n:]]
        out[EDGE_HIT_RATIO] = self.hit_num / self.hit_den if self.hit_den else 0.0
        return out

    def row(self) -> array[float]:
        return array("d", self.values())


def rounded(values: Sequence[Value]) -> list[Value]:
    """Reply precision: counts as ints, bandwidth to 3 decimals, ratio and medians to 4."""
    out = list(values)
    out[EDGE_BW] = round(values[EDGE_BW], 3)
    out[ORIGIN_BW] = round(values[ORIGIN_BW], 3)
    out[COUNT_START:COUNT_END] = [int(v) for v in values[COUNT_START:COUNT_END]]
    out[EDGE_RT0:EDGE_HIT_RATIO] = [round(v, 4) for v in values[EDGE_RT0:EDGE_HIT_RATIO]]
    out[EDGE_HIT_RATIO] = round(values[EDGE_HIT_RATIO], 4)
    return out


class UnknownMetric(ValueError):
    """A `metric=` value the API does not know."""


def select_columns(metrics: Sequence[str]) -> tuple[int, ...]:
    """Columns for `metric=` filters (flat keys or whole families); all when none given."""
    if not metrics:
        return OUTPUT_COLUMNS
    wanted: set[int] = set()
    for name in metrics:
        if name in _COLUMN_OF:
            wanted.add(_COLUMN_OF[name])
        elif name in FAMILIES:
            wanted.update(FAMILIES[name])
        else:
            raise UnknownMetric(name)
    return tuple(c for c in OUTPUT_COLUMNS if c in wanted)


def metric_names(columns: Iterable[int], nested: bool) -> list[str]:
    """The reply's `metrics` list: its top-level metric keys, in order."""
    names: list[str] = []
    for c in columns:
        name = _RT_COLUMNS[c][0] if nested and c in _RT_COLUMNS else COLUMN_KEYS[c]
        if name not in names:
            names.append(name)
    return names


def render(values: Sequence[Value], columns: Iterable[int], nested: bool) -> dict[str, object]:
    """One `data` object, request times flat (`edge_request_time_0_250k`) or nested."""
    out: dict[str, object] = {}
    for c in columns:
        if nested and c in _RT_COLUMNS:
            family, rng = _RT_COLUMNS[c]
            group = out.setdefault(family, {})
            assert isinstance(group, dict)
            group[rng] = values[c]
        else:
            out[COLUMN_KEYS[c]] = values[c]
    return out


class TrafficReader:
    """Windows over the per-minute rows of one account, with cached account totals."""

    def __init__(
        self,
        traffic: AccountTraffic,
        late_seconds: float,
        cache_minutes: int,
        late_half_seconds: float = 0.0,
    ) -> None:
        self.traffic = traffic
        self.late_seconds = late_seconds
        self.late_half_seconds = late_half_seconds
        self._totals: OrderedDict[int, array[float]] = OrderedDict()
        self._cache_minutes = cache_minutes

    def total_row(self, minute_start: int) -> array[float]:
        """Final account totals of one minute (sum over resources)."""
        cached = self._totals.get(minute_start)
        if cached is not None:
            return cached
        acc = WindowSum(1)
        for row in self.traffic.rows(minute_start):
            acc.add(row)
        total = acc.row()
        self._totals[minute_start] = total
        if len(self._totals) > self._cache_minutes:
            self._totals.popitem(last=False)
        return total

    def churned(self) -> None:
        """The resource list changed: account totals are summed again."""
        self._totals.clear()

    def _indices(self, resources: Sequence[str] | None) -> list[int]:
        index = self.traffic.index
        if resources is None:
            return list(range(len(self.traffic.resources)))
        return sorted({index[r] for r in resources if r in index})

    def totals(
        self, start: int, minutes: int, now: float, resources: Sequence[str] | None = None
    ) -> list[Value]:
        """Account totals over [start, start + minutes) as seen at `now`."""
        acc = WindowSum(minutes)
        for i in range(minutes):
            m = start + 60 * i
            f = late_fraction(m, now, self.late_seconds, self.late_half_seconds)
            if f <= 0.0:
                continue
            if f >= 1.0 and resources is None:
                acc.add(self.total_row(m))
                continue
            rows = self.traffic.rows(m)
            for j in self._indices(resources):
                acc.add(rows[j], f)
        return acc.values()

    def per_resource(
        self,
        start: int,
        minutes: int,
        now: float,
        resources: Sequence[str] | None = None,
        drop_deleted: bool = False,
    ) -> list[tuple[CdnResource, list[Value]]]:
        """One figure list per resource over [start, start + minutes) as seen at `now` (a
        resource without a minute of its life in the window is left out, and with
        `drop_deleted` one deleted by `now` too, whatever minutes of its life the window holds;
        the account totals keep them)."""
        alive = self.traffic.alive
        spans = self.traffic.spans
        indices = [
            j
            for j in self._indices(resources)
            if alive(j, start, minutes) and not (drop_deleted and spans[j][1] <= now)
        ]
        sums = [WindowSum(minutes) for _ in indices]
        for i in range(minutes):
            m = start + 60 * i
            f = late_fraction(m, now, self.late_seconds, self.late_half_seconds)
            if f <= 0.0:
                continue
            rows = self.traffic.rows(m)
            for acc, j in zip(sums, indices, strict=True):
                acc.add(rows[j], f)
        return [
            (self.traffic.resources[j], acc.values()) for acc, j in zip(sums, indices, strict=True)
        ]
