"""The DVR area's replies: their types, parsing, the endpoints that give them and the typed
read of the poller (``DvrReader``, its ``DvrClient``); the admin API passes the same endpoints
through (``Operations.send``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from exporter.support.collector import untrack
from exporter.upstream.client import UpstreamClient
from exporter.upstream.endpoint import READ_LANES, Endpoint
from exporter.upstream.fields import flag, lst, number, obj, text

_STREAM = "/app/dvr-net/v1/{account}/streams/{stream_name}"
_SLASHED = frozenset({"stream_name"})  # a stream name keeps its slashes (live/main)
DVR_GET = Endpoint("dvr", "dvr_get", "GET", _STREAM, lanes=READ_LANES, slashed=_SLASHED)
DVR_DELETE = Endpoint("dvr", "dvr_delete", "DELETE", _STREAM, slashed=_SLASHED)
ENDPOINTS = (DVR_GET, DVR_DELETE)


@dataclass(frozen=True)
class DvrRange:
    start: float
    duration: float


@dataclass(frozen=True)
class DvrNode:
    stream_name: str
    host: str
    is_alive: bool
    enabled: bool
    window: float
    duration: float
    first: float
    ranges: tuple[DvrRange, ...] = field(default_factory=tuple)


def parse_dvr_stream(body: Any) -> list[DvrNode]:
    """The nodes of one stream's reply, left out of the collector's passes with their ranges
    (``collector.untrack``: they hold strings, numbers and a tuple of ranges, all frozen); the
    poller keeps them until the stream's next reply."""
    d = obj(body, "dvr", "dvr reply")
    out = []
    for i, item in enumerate(lst(d.get("data"), "dvr", "dvr reply.data")):
        where = f"data[{i}]"
        n = obj(item, "dvr", where)
        dvr = obj(n.get("dvr") or {}, "dvr", f"{where}.dvr")
        ranges = tuple(
            DvrRange(
                number(obj(r, "dvr", f"{where}.dvr.ranges[{j}]"), "from", "dvr", where),
                number(r, "duration", "dvr", f"{where}.dvr.ranges[{j}]"),
            )
            for j, r in enumerate(lst(dvr.get("ranges") or [], "dvr", f"{where}.dvr.ranges"))
        )
        untrack(ranges, *ranges)
        out.append(
            DvrNode(
                stream_name=str(n.get("stream_name") or d.get("stream_name") or ""),
                host=text(n, "host", "dvr", where),
                is_alive=flag(n, "is_alive", "dvr", where),
                enabled=flag(dvr, "enabled", "dvr", f"{where}.dvr", default=False),
                window=number(dvr, "window", "dvr", f"{where}.dvr", default=0),
                duration=number(dvr, "duration", "dvr", f"{where}.dvr", default=0),
                first=number(dvr, "from", "dvr", f"{where}.dvr", default=0),
                ranges=ranges,
            )
        )
        untrack(out[-1])
    return out


class DvrReader:
    """The DVR poller's typed read (its ``DvrClient``), sent by ``upstream``."""

    def __init__(self, upstream: UpstreamClient) -> None:
        self._upstream = upstream

    async def dvr_stream(self, account: str, stream: str) -> list[DvrNode]:
        return parse_dvr_stream(await self._upstream.read(DVR_GET, account, stream_name=stream))
