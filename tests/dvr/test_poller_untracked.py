"""What the DVR poller keeps between polls, every stream's nodes and their ranges, is left out
of the collector's passes (``collector.untrack``)."""

from __future__ import annotations

import gc

from exporter.dvr import DvrPoller
from exporter.dvr.reply import DvrNode, parse_dvr_stream
from exporter.dvr.settings import DvrSettings
from exporter.exposition import Store
from exporter.support.clock import FakeClock

NOW = 1_767_225_600.0
REPLY = {
    "stream_name": "live/main",
    "data": [
        {"host": "n1", "is_alive": True, "dvr": {"enabled": True, "window": 7200,
                                                 "ranges": [{"from": NOW - 60, "duration": 50}]}},
        {"host": "n2", "is_alive": False},
    ],
}  # fmt: skip


class ParsingDvr:
    """Replies parsed as the real reader parses them."""

    async def dvr_stream(self, account: str, stream: str) -> list[DvrNode]:
        return list(parse_dvr_stream(REPLY))


def test_parsed_nodes_and_their_ranges_are_untracked() -> None:
    nodes = parse_dvr_stream(REPLY)
    assert [n.host for n in nodes] == ["n1", "n2"]
    assert len(nodes[0].ranges) == 1
    held = [*nodes, *(n.ranges for n in nodes), *(r for n in nodes for r in n.ranges)]
    assert [o for o in held if gc.is_tracked(o)] == []


async def test_what_the_poller_keeps_between_polls_is_untracked() -> None:
    clock = FakeClock(NOW)
    poller = DvrPoller(ParsingDvr(), Store(clock), clock, DvrSettings(), {"acme": ("live/main",)})
    await poller.poll("acme")
    kept = poller._last["acme"]["live/main"]
    assert len(kept[1]) == 2
    assert not gc.is_tracked(kept)
    assert not gc.is_tracked(kept[1])
