"""The last hour of each account's traffic windows (edge rate, bandwidth, hit ratio) for charts.

It listens to the Store: every ``traffic/<account>`` fragment a poll publishes describes the
latest complete window, and its account gauges become one point. At most ``MAX_POINTS`` points
an account (one an hour at one window a minute is 60), four floats each: a few kB for any
number of resources. Points older than an hour before the newest are dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

from exporter.exposition import Fragment, StoreKey

HOUR_SECONDS = 3600.0
MAX_POINTS = 120


@dataclass(frozen=True)
class Point:
    """One complete window of an account, edge side."""

    end: float  # window end, unix seconds
    requests_per_second: float | None
    bytes_per_second: float | None
    hit_ratio: float | None


def point_of(account: str, fragment: Fragment) -> Point | None:
    """The account's window in a traffic fragment; None before its first window."""
    from exporter.traffic.families import ACCOUNT  # here: the traffic area imports this module

    end = fragment.value(ACCOUNT.window_end, account=account)
    if end is None or end <= 0:
        return None
    return Point(
        end,
        fragment.value(ACCOUNT.requests_per_second, account=account, side="edge"),
        fragment.value(ACCOUNT.bandwidth, account=account, side="edge"),
        fragment.value(ACCOUNT.edge_hit_ratio, account=account),
    )


class TrafficHistory:
    """Per account, the points of the last hour, oldest first (a bounded ring).

    Each record swaps in a new tuple, so a page being rendered never reads a ring while it
    changes, whichever thread publishes.
    """

    def __init__(self) -> None:
        self._rings: dict[str, tuple[Point, ...]] = {}

    def record(self, key: StoreKey, fragment: Fragment) -> None:
        """Store listener: take the window of a published traffic fragment."""
        if key.area != "traffic":
            return
        account = key.account
        point = point_of(account, fragment)
        if point is None:
            return
        ring = self._rings.get(account, ())
        if ring and point.end < ring[-1].end:
            return  # an older window (never published after a newer one); keep the line ordered
        if ring and point.end == ring[-1].end:
            ring = ring[:-1]  # the same window republished (a re-read may have raised it)
        oldest = point.end - HOUR_SECONDS
        kept = [p for p in ring[-(MAX_POINTS - 1) :] if p.end > oldest]
        self._rings[account] = (*kept, point)

    def points(self, account: str) -> tuple[Point, ...]:
        return self._rings.get(account, ())

    def snapshot(self) -> dict[str, tuple[Point, ...]]:
        """Every account's points (for the charts file)."""
        return dict(self._rings)

    def restore(self, account: str, points: list[Point]) -> None:
        """Points kept from before a restart, oldest first; windows read since come after."""
        newer = [p for p in self._rings.get(account, ()) if not points or p.end > points[-1].end]
        self._rings[account] = (*points, *newer)[-MAX_POINTS:]

    def forget(self, account: str) -> None:
        self._rings.pop(account, None)
