"""Network DVR: per-node recordings that grow while live, deletions to the second, node faults.

What a node holds for a stream at time `now`: the stream's on-air intervals (a seeded
pattern) inside the DVR window [now - window, now), minus the node's downtime, minus every
deletion made on that node (a deletion made at time d removes only seconds before d, so a live
archive accumulates again afterwards).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from exporter.simulator.dataset import DvrStream
from exporter.simulator.hashing import Stream, key_hash, mix
from exporter.support.clock import Clock

Interval = tuple[int, int]  # [start, end) in Unix seconds
HOUR = 3600


@dataclass
class Node:
    """Fault switches of one DVR node (shared by every account's streams on it)."""

    host: str
    alive: bool = True
    failing: bool = False
    hidden: bool = False
    downtime: list[list[int | None]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "host": self.host,
            "alive": self.alive,
            "failing": self.failing,
            "hidden": self.hidden,
        }


def subtract(intervals: Iterable[Interval], cuts: Iterable[Interval]) -> list[Interval]:
    """`intervals` minus the union of `cuts` (both half-open, any order)."""
    out = sorted(intervals)
    for c0, c1 in cuts:
        if c1 <= c0:
            continue
        nxt: list[Interval] = []
        for a, b in out:
            if b <= c0 or a >= c1:
                nxt.append((a, b))
                continue
            if a < c0:
                nxt.append((a, c0))
            if c1 < b:
                nxt.append((c1, b))
        out = nxt
    return out


def merge(intervals: Iterable[Interval]) -> list[Interval]:
    out: list[Interval] = []
    for a, b in sorted(intervals):
        if b <= a:
            continue
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def on_air(key: int, pattern: str, lo: int, hi: int) -> list[Interval]:
    """On-air intervals within [lo, hi): `continuous` has a short break in about a quarter of
    hours; `shows` is on air for the first 25-50 minutes of every hour."""
    pieces: list[Interval] = []
    for block in range(lo // HOUR, (hi - 1) // HOUR + 1):
        h0 = block * HOUR
        rnd = Stream(mix(key ^ block))
        if pattern == "shows":
            pieces.append((h0, h0 + rnd.integer(1500, 3000)))
        elif rnd.next() < 0.25:
            gap_at = h0 + rnd.integer(0, HOUR - 100)
            pieces += [(h0, gap_at), (gap_at + rnd.integer(5, 90), h0 + HOUR)]
        else:
            pieces.append((h0, h0 + HOUR))
    clipped = [(max(a, lo), min(b, hi)) for a, b in pieces]
    return merge(clipped)


class DvrState:
    """Streams of every account, the nodes, and the deletions made on them."""

    def __init__(
        self,
        seed: int,
        clock: Clock,
        streams: dict[str, tuple[DvrStream, ...]],
        hosts: Iterable[str],
    ) -> None:
        self._seed = seed
        self._clock = clock
        self.streams = {acc: {s.name: s for s in ss} for acc, ss in streams.items()}
        self.nodes = {h: Node(h) for h in hosts}
        self._deleted: dict[tuple[str, str, str], list[Interval]] = {}

    def now(self) -> int:
        return int(self._clock.time())

    def set_node(
        self,
        host: str,
        *,
        alive: bool | None = None,
        failing: bool | None = None,
        hidden: bool | None = None,
    ) -> Node:
        """Switch a node's faults: dead (no recording), failing deletions, hidden from replies."""
        node = self.nodes[host]
        now = self.now()
        if alive is not None and alive != node.alive:
            if alive:
                node.downtime[-1][1] = now
            else:
                node.downtime.append([now, None])
            node.alive = alive
        if failing is not None:
            node.failing = failing
        if hidden is not None:
            node.hidden = hidden
        return node

    def reset_nodes(self) -> None:
        for host in self.nodes:
            self.set_node(host, alive=True, failing=False, hidden=False)

    def _key(self, account: str, stream: str) -> int:
        return key_hash(self._seed, "dvr", account, stream)

    def ranges(self, account: str, stream: DvrStream, host: str) -> list[Interval]:
        now = self.now()
        if not stream.enabled:
            return []
        recorded = on_air(self._key(account, stream.name), stream.pattern, now - stream.window, now)
        down = [(int(a or 0), int(now if b is None else b)) for a, b in self.nodes[host].downtime]
        cuts = down + self._deleted.get((account, stream.name, host), [])
        return subtract(recorded, cuts)

    def is_alive(self, account: str, stream: DvrStream, host: str) -> bool:
        now = self.now()
        if not self.nodes[host].alive:
            return False
        return bool(on_air(self._key(account, stream.name), stream.pattern, now, now + 1))

    def visible_hosts(self, stream: DvrStream) -> list[str]:
        return [h for h in stream.hosts if not self.nodes[h].hidden]

    def records(self, account: str, stream: DvrStream) -> list[dict[str, Any]]:
        out = []
        for host in self.visible_hosts(stream):
            ranges = self.ranges(account, stream, host)
            out.append(
                {
                    "stream_name": stream.name,
                    "host": host,
                    "is_alive": self.is_alive(account, stream, host),
                    "dvr": {
                        "enabled": stream.enabled,
                        "window": stream.window,
                        "duration": sum(b - a for a, b in ranges),
                        "from": ranges[0][0] if ranges else 0,
                        "ranges": [{"duration": b - a, "from": a} for a, b in ranges],
                    },
                }
            )
        return out

    def delete(
        self, account: str, stream: DvrStream, hosts: list[str], lo: int, hi: int
    ) -> list[str]:
        """Remove [lo, hi) (only seconds already past) on `hosts`; returns the failed hosts."""
        failed = []
        cut = (lo, min(hi, self.now()))
        for host in hosts:
            if self.nodes[host].failing:
                failed.append(host)
            elif cut[1] > cut[0]:
                self._deleted.setdefault((account, stream.name, host), []).append(cut)
        return failed
