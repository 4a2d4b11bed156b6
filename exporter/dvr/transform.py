"""Pure DVR transform: the node records of each stream -> a Fragment."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from exporter.dvr import families as f
from exporter.dvr.reply import DvrNode
from exporter.exposition import EVERYTHING, FamilySelection, Fragment


def last_recording_end(node: DvrNode) -> float | None:
    """The end of the latest range (``from + duration``); None without ranges."""
    return max((r.start + r.duration for r in node.ranges), default=None)


def dvr_fragment(
    account: str,
    streams: Mapping[str, Sequence[DvrNode]],
    selection: FamilySelection = EVERYTHING,
) -> Fragment:
    """Series per (stream, node) of the replies given; a node not in a reply has none.

    ``streams`` maps the configured stream name (used as the ``stream`` label) to its nodes.
    A node listed twice in one reply is exported once (the first record).
    """
    b = selection.builder()
    b.declare(*f.SPECS)
    for stream in sorted(streams):
        seen: set[str] = set()
        for node in sorted(streams[stream], key=lambda n: n.host):
            if node.host in seen:
                continue
            seen.add(node.host)
            labels = (account, stream, node.host)
            b.add(f.ALIVE, labels, 1 if node.is_alive else 0)
            b.add(f.ENABLED, labels, 1 if node.enabled else 0)
            b.add(f.WINDOW, labels, node.window)
            b.add(f.RECORDED, labels, node.duration)
            b.add(f.RANGES, labels, len(node.ranges))
            if node.first > 0:
                b.add(f.FIRST_RECORDING, labels, node.first)
            end = last_recording_end(node)
            if end is not None:
                b.add(f.LAST_RECORDING_END, labels, end)
    return b.build()
