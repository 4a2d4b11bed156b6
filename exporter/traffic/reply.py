"""The metrics endpoint (``/app/metrics/v1/``, per resource ``.../resources``): the request,
the reply as received (``Answer``), and its checked model (``MetricsReply``)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from exporter.upstream.client import UpstreamClient, minute
from exporter.upstream.errors import UpstreamError
from exporter.upstream.fields import fail, lst, obj
from exporter.upstream.reply import Reply, clock_skew

if TYPE_CHECKING:
    from exporter.traffic.parse import Row

TOTALS_PATH = "/app/metrics/v1/"
RESOURCES_PATH = "/app/metrics/v1/resources"


@dataclass(frozen=True, slots=True)
class MetricsRow:
    """One element of ``data``: the metric values, plus the resource identity when per resource.
    A row parsed as the reply was decoded (``parse.row_reader``) has no values: ``parsed``
    holds them (without the bytes delivered, which need the window's length) and ``rejected``
    the gauge keys dropped, or ``error`` what its values raised."""

    values: Mapping[str, Any]
    resource: str = ""
    resource_name: str = ""
    cname: str = ""
    parsed: Row | None = None
    rejected: tuple[str, ...] = ()
    error: UpstreamError | None = None


@dataclass(frozen=True)
class MetricsReply:
    start: str
    end: str
    account: str
    rows: tuple[MetricsRow, ...]


_RESOURCE_KEYS = ("resource", "resource_name", "cname")


# Keys of an error body; a metrics reply carrying one is an error whatever else it holds
# (`{"error": ..., "data": []}` is no answer, not "no resources").
METRICS_ERROR_KEYS = ("error", "message", "description")


def resource_identity(row: Mapping[str, Any]) -> tuple[str, str, str] | None:
    """A per-resource row's (resource, resource_name, cname); None without a resource id."""
    rid = row.get("resource")
    if not isinstance(rid, str | int) or rid == "":
        return None
    return str(rid), str(row.get("resource_name") or ""), str(row.get("cname") or "")


def parse_metrics(body: Any, per_resource: bool) -> MetricsReply:
    """The checked metrics reply, taking the decoded ``body`` over: its row objects become
    the rows' values (the resource keys taken out of them), never copied, so the body is
    not to be used afterwards (the read step decodes it and hands it over). An element that
    is a ``MetricsRow`` already (``parse.row_reader``, as the body was decoded) is kept as it
    is: that reader leaves each element it cannot make a row of as it was, for the checks
    here."""
    d = obj(body, "traffic", "metrics reply")
    for key in METRICS_ERROR_KEYS:
        text = d.get(key)
        if text not in (None, "", [], {}):
            raise fail("traffic", f"metrics reply.{key}", f"an error body: {str(text)[:200]}")
    rows = []
    for i, item in enumerate(lst(d.get("data"), "traffic", "metrics reply.data")):
        if type(item) is MetricsRow:
            rows.append(item)
            continue
        r = obj(item, "traffic", f"data[{i}]")
        if per_resource:
            ident = resource_identity(r)
            if ident is None:
                raise fail("traffic", f"data[{i}].resource", "missing resource identifier")
            for key in _RESOURCE_KEYS:
                r.pop(key, None)
            rows.append(MetricsRow(r, *ident))
        else:
            rows.append(MetricsRow(r))
    return MetricsReply(
        str(d.get("start", "")), str(d.get("end", "")), str(d.get("account", "")), tuple(rows)
    )


@dataclass(frozen=True)
class Answer:
    """A metrics reply as the event loop received it: the transport's ``reply`` (a large
    body still bytes, ``Reply.decoded``) and the platform's clock minus ours from its
    ``Date`` header (None without one). The read step decodes and checks it."""

    reply: Reply
    skew_seconds: float | None = None
    client: UpstreamClient | None = None  # told what an undecoded body was (``verdict``)
    account: str = ""
    loop: asyncio.AbstractEventLoop | None = None  # the loop the client's budget lives on

    def told(self, data: Any) -> None:
        """``data``: the body decoded (None: not JSON), on the worker thread. A body the
        transport left undecoded is counted, and one about a rate limit backs the account
        off on the loop, as the transport does for the bodies it decodes itself."""
        if self.reply.decoded or self.client is None or self.loop is None:
            return
        if self.client.verdict("traffic", self.reply, data):
            budget, retry_after = self.client.budget, self.reply.retry_after
            self.loop.call_soon_threadsafe(budget.signal, self.account, "traffic", retry_after)

    @classmethod
    def of(cls, data: Any, skew_seconds: float | None = None) -> Answer:
        """A good reply whose body is ``data`` (decoded already)."""
        return cls(Reply(200, b"", data, "application/json"), skew_seconds)


class TrafficSource(Protocol):
    """The one upstream call the poller needs (``MetricsEndpoint`` has it; tests pass a fake)."""

    async def traffic(
        self,
        account: str,
        start: float,
        end: float,
        per_resource: bool,
        metrics: Sequence[str] = (),
        resource: str | None = None,
    ) -> Answer: ...


class MetricsEndpoint:
    """``TrafficSource`` over the transport: one GET per half; a reply that is no answer
    (status, small error body) raises UpstreamError here, on the loop, as the transport
    received it; a large body comes back as bytes."""

    def __init__(self, client: UpstreamClient) -> None:
        self.client = client

    async def traffic(
        self,
        account: str,
        start: float,
        end: float,
        per_resource: bool,
        metrics: Sequence[str] = (),
        resource: str | None = None,
    ) -> Answer:
        params: list[tuple[str, str]] = [
            ("account", account),
            ("start", minute(start)),
            ("end", minute(end)),
        ]
        params += [("metric", m) for m in metrics]
        if resource is not None:
            params.append(("resource", resource))
        path = RESOURCES_PATH if per_resource else TOTALS_PATH
        c = self.client
        reply = await c.request("traffic", "GET", path, params, account=account, raw=True)
        if reply.decoded:
            c.checked("traffic", reply)
            return Answer(reply, clock_skew(reply))
        return Answer(reply, clock_skew(reply), c, account, asyncio.get_running_loop())
