"""The network, replaced by a deterministic in-process call of the simulator's aiohttp app.

The seam is ``aiohttp.ClientSession.request``: everything above it is the exporter's real
``UpstreamClient`` (auth header, retries, budget, rate-limit handling, decoding, the ``Date``
header's skew reading), everything below it the simulator's real application (its middleware:
request log, faults, auth, rate limit; its route handlers; its ``Date`` hook), run with
``Application._handle`` on a request built by ``aiohttp.test_utils.make_mocked_request``.
What is left out is the socket and the HTTP parser: no port, no kernel scheduling, so the
same seed gives the same run byte for byte. Outages that never reach a server (a refused
connection, a timeout) are raised here, as aiohttp would raise them.
"""

from __future__ import annotations

import asyncio
import calendar
import email.utils
import functools
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any

import aiohttp
from aiohttp import web
from aiohttp.http import HttpVersion11, RawRequestMessage
from aiohttp.streams import EMPTY_PAYLOAD
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from exporter.simulator import Simulator

if TYPE_CHECKING:
    from exporter.traffic.reply import MetricsReply, TrafficSource

# A reply whose `Date` lies further than this off the clock the daemon believes is doubted
# (docs/windowing.md, *Reads follow the platform's confirmed clock*: "more than 5 s").
DATE_TOLERANCE_SECONDS = 5.0
RECEIVER_HOST = "receiver.invalid"  # remote_write.url's host: the receiver is recorded here
METRICS_PATHS = ("/app/metrics/v1/", "/app/metrics/v1", "/app/metrics/v1/resources",
                 "/app/metrics/v1/resources/")  # fmt: skip


@dataclass(frozen=True)
class Read:
    """One metrics request as the platform saw it: when (platform clock), which window, which
    half, and whether the reply was a usable answer for exactly that window."""

    at: float
    account: str
    start: int
    end: int
    resources: bool
    status: int
    answered: bool  # HTTP 200 with `data` and the asked window echoed
    audit: bool = False  # a re-read of the standing audit: compared, never counted
    # its `Date` lies off the platform's clock (quirk bogus-date): the daemon doubts the read
    # it belongs to (both halves asked together) and applies none of it (docs/windowing.md)
    misdated: bool = False


@dataclass
class Transport:
    """Shared by every session of one seed: the app, the reads seen, the outage switch."""

    sim: Simulator
    app: web.Application = field(init=False)
    reads: list[Read] = field(default_factory=list)
    down: str = ""  # "timeout" or "refused" while the platform is unreachable
    receiver: str = ""  # the receiver's answer while it does not accept: "refused", "503", "403"
    refused_writes: list[tuple[float, bytes]] = field(default_factory=list)  # not accepted
    sent: int = 0
    auditing: bool = False  # the standing audit's read is under way (``AuditSource``)
    # the bodies posted to the remote-write receiver, each with when (platform clock)
    written: list[tuple[float, bytes]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.app = self.sim.build_app()
        self.app.freeze()

    def session(self) -> Session:
        return Session(self)


class AuditSource:
    """The audit's view of the upstream client (``exporter.traffic.auditor``): its reads are
    marked in the record, since the audit compares what it reads and counts nothing."""

    def __init__(self, source: TrafficSource, transport: Transport) -> None:
        self._source = source
        self._transport = transport

    async def traffic(self, *args: Any, **kwargs: Any) -> MetricsReply:
        """``TrafficSource.traffic``, its reads marked."""
        self._transport.auditing = True
        try:
            return await self._source.traffic(*args, **kwargs)
        finally:
            self._transport.auditing = False


class Session:
    """What ``UpstreamClient`` uses of ``aiohttp.ClientSession``: ``request`` and ``close``."""

    def __init__(self, transport: Transport) -> None:
        self._transport = transport
        self.closed = False

    def request(self, method: str, url: URL | str, **kwargs: Any) -> Exchange:
        return Exchange(self._transport, method, URL(url), kwargs)

    def post(self, url: URL | str, **kwargs: Any) -> Exchange:
        return Exchange(self._transport, "POST", URL(url), kwargs)

    async def close(self) -> None:
        self.closed = True


class Response:
    """The parts of ``aiohttp.ClientResponse`` the client reads."""

    def __init__(self, status: int, headers: CIMultiDictProxy[str], body: bytes) -> None:
        self.status = status
        self.headers = headers
        self._body = body
        self.content = _Content(body)

    async def read(self) -> bytes:
        return self._body

    def close(self) -> None:
        return None


class _Content:
    """The part of ``aiohttp.StreamReader`` the remote writer reads: its answer's head."""

    def __init__(self, body: bytes) -> None:
        self._body = body

    async def read(self, n: int = -1) -> bytes:
        head, self._body = (self._body, b"") if n < 0 else (self._body[:n], self._body[n:])
        return head

    def at_eof(self) -> bool:
        return not self._body


class Exchange:
    """One request through the simulator's app, as an async context manager."""

    def __init__(self, t: Transport, method: str, url: URL, kwargs: Mapping[str, Any]) -> None:
        self._t = t
        self._method = method
        params = kwargs.get("params")
        self._url = url.extend_query(params) if params else url
        self._headers = CIMultiDict(kwargs.get("headers") or {})
        self._data: bytes = kwargs.get("data") or b""
        receiver = url.host == RECEIVER_HOST
        if kwargs.get("json") is not None or (self._data and not receiver):
            raise NotImplementedError("the simulation sends GET requests only (static token)")

    async def __aenter__(self) -> Response:
        t = self._t
        if self._url.host == RECEIVER_HOST:  # a receiver that takes every write, unless down
            if t.receiver:
                t.refused_writes.append((t.sim.clock.time(), self._data))
                if t.receiver == "refused":
                    raise aiohttp.ClientConnectionError("Connection refused")
                return Response(int(t.receiver), CIMultiDictProxy(CIMultiDict()), b"down")
            t.written.append((t.sim.clock.time(), self._data))
            return Response(204, CIMultiDictProxy(CIMultiDict()), b"")
        t.sent += 1
        if t.down == "timeout":
            raise TimeoutError
        if t.down == "refused":
            raise aiohttp.ClientConnectionError("Connection refused")
        request = _request(self._method, self._url, self._headers)
        response = await t.app._handle(request)
        await response.prepare(request)  # the on_response_prepare hooks: the Date header
        body = response.body if isinstance(response, web.Response) else b""
        raw = bytes(body) if isinstance(body, (bytes, bytearray)) else b""
        if self._url.path in METRICS_PATHS:
            self._record(response.status, raw, response.headers.get("Date", ""))
        return Response(response.status, CIMultiDictProxy(CIMultiDict(response.headers)), raw)

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        return None

    def _record(self, status: int, raw: bytes, date: str) -> None:
        q = self._url.query
        now = self._t.sim.clock.time()
        start, end = _minute(q.get("start", "")), _minute(q.get("end", ""))
        answered = False
        if status == 200:
            try:
                body = json.loads(raw)
            except ValueError:
                body = None
            answered = (
                isinstance(body, dict)
                and isinstance(body.get("data"), list)
                and _minute(str(body.get("start", ""))) == start
                and _minute(str(body.get("end", ""))) == end
            )
        self._t.reads.append(
            Read(
                at=now,
                account=q.get("account", ""),
                start=start,
                end=end,
                resources="resources" in self._url.path,
                status=status,
                answered=answered,
                audit=self._t.auditing,
                misdated=_date_off(date, now),
            )
        )


def _date_off(date: str | None, now: float) -> bool:
    """Whether a reply's ``Date`` is off the platform's clock by more than the exporter's
    ``DATE_TOLERANCE_SECONDS`` (a reply without one, or with one that does not parse, confirms and
    doubts nothing: docs/windowing.md)."""
    at = _date(date) if date else None
    return at is not None and abs(at - now) > DATE_TOLERANCE_SECONDS


@functools.lru_cache(maxsize=256)
def _date(date: str) -> float | None:
    """A ``Date`` header as Unix seconds (None when it does not parse); the two halves of a
    read are answered in the same second."""
    try:
        return email.utils.parsedate_to_datetime(date).timestamp()
    except (TypeError, ValueError):
        return None


class _Socket:
    """The connection a request came over, as far as the simulator's handlers ask."""

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 0) if name in ("peername", "sockname") else default

    def is_closing(self) -> bool:
        return False


class _Writer:
    """Where a response's headers and body would be written: nowhere (the body is read from
    the ``web.Response`` itself)."""

    def __init__(self, transport: _Socket) -> None:
        self.transport = transport
        self.buffer_size = 0
        self.output_size = 0

    async def write_headers(self, status_line: str, headers: Any) -> None:
        return None

    async def write(self, data: Any) -> None:
        return None

    async def write_eof(self, data: bytes = b"") -> None:
        return None

    async def drain(self) -> None:
        return None

    def enable_compression(self, *args: Any, **kwargs: Any) -> None:
        return None

    def enable_chunking(self) -> None:
        return None

    def send_headers(self, *args: Any, **kwargs: Any) -> None:
        return None

    def set_eof(self) -> None:
        return None


class _Protocol:
    def __init__(self) -> None:
        self.transport = _Socket()
        self.writer = _Writer(self.transport)
        self.peername = ("127.0.0.1", 0)
        self.sockname = ("127.0.0.1", 0)
        self.ssl_context = None
        self.max_field_size = 8190
        self.max_line_length = 8190
        self.max_headers = 128


def _request(method: str, url: URL, headers: CIMultiDict[str]) -> web.Request:
    """A ``web.Request`` as aiohttp's server would build it from the parsed request line."""
    proxy = CIMultiDictProxy(headers)
    raw = tuple((k.encode(), v.encode()) for k, v in headers.items())
    path = url.path_qs
    message = RawRequestMessage(
        method, path, HttpVersion11, proxy, raw, False, None, False, False, URL(path)
    )
    protocol = _Protocol()
    return web.Request(
        message,
        EMPTY_PAYLOAD,
        protocol,  # type: ignore[arg-type]
        protocol.writer,  # type: ignore[arg-type]
        asyncio.current_task(),  # type: ignore[arg-type]
        asyncio.get_running_loop(),
    )


@functools.lru_cache(maxsize=4096)  # a run's minutes are asked for again and again
def _minute(text: str) -> int:
    """``YYYY-MM-DDThh:mm:00`` -> Unix seconds (-1 when unreadable)."""
    try:
        return calendar.timegm(time.strptime(text[:16], "%Y-%m-%dT%H:%M"))
    except ValueError:
        return -1
