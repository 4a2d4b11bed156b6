"""The counters a ledger keeps: a resource's series, what the settle reads at one age added,
which of their keys are published, and the arithmetic of counted values (requests, increases,
what totals hold beyond their resources)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from exporter.support.collector import untrack
from exporter.traffic.parse import COUNT_INDEX, COUNT_KEYS, Values, add_into, blank

EDGE_REQUESTS = COUNT_INDEX["edge_requests_total"]
HIT_BYTES = COUNT_INDEX["edge_hit_bytes"]


@dataclass(slots=True)
class Series:
    """Cumulative counters of one per-resource series (NaN = the upstream never sent the key).

    ``shown`` marks the keys already published with their value (``SHOWN``): a key that gets
    its first value is published at 0 first (``AT_ZERO``) and keeps 0 until a scrape has been
    answered with that 0 (``AccountLedger.zero_seq``), so that ``increase()`` sees its first
    count whenever Prometheus scrapes.
    ``last_seen`` is when the resource was last in a first-read window under its own series.
    It holds strings, numbers and arrays only, so it and its values are left out of the
    collector's passes (``collector.untrack``).
    """

    name: str
    cname: str
    values: Values = field(default_factory=blank)
    last_seen: float = 0.0
    shown: bytearray = field(default_factory=lambda: bytearray(len(COUNT_KEYS)))

    def __post_init__(self) -> None:
        untrack(self, self.values)


SHOWN = 1  # Series.shown: published with its value
AT_ZERO = 2  # published at 0, its value not yet: no scrape was answered with the 0 so far


def shown_mask(values: Values) -> bytearray:
    return bytearray(1 if v == v else 0 for v in values)


LATE_PARTS = ("requests", "hit_bytes")  # the lateness counters (scope ``late``)


@dataclass(slots=True)
class Late:
    """What the settle reads at one age added, and the share of the latest run's requests."""

    requests: float = 0.0  # edge requests added, cumulative
    hit_bytes: float = 0.0  # edge hit bytes added, cumulative
    share: float | None = None  # of the latest run settled at this age: added / counted after
    shown: set[str] = field(default_factory=set)  # the LATE_PARTS published (at 0 first)
    held: set[str] = field(default_factory=set)  # of them, those still at 0 (as AT_ZERO)


def requests(values: Values) -> float:
    """Edge requests of a set of counted values (absent = 0)."""
    v = values[EDGE_REQUESTS]
    return v if v == v else 0.0


def positive_diff(new: Values, old: Values | None) -> Values | None:
    """Per key max(0, new - old) with absent as 0; None when nothing increased."""
    out: Values | None = None
    for i, n in enumerate(new):
        if n != n:
            continue
        o = old[i] if old is not None else 0.0
        d = n - (o if o == o else 0.0)
        if d > 0:
            if out is None:
                out = blank(len(new))
            out[i] = d
    return out


def unlisted_rest(totals: Values, resources: Iterable[Values]) -> Values | None:
    """What ``totals`` hold beyond the sum of ``resources``, per key (positive part; None
    when nothing): the traffic of resources a per-resource reply no longer lists."""
    listed = blank(len(totals))
    for values in resources:
        add_into(listed, values)
    return positive_diff(totals, listed)
