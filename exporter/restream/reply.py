"""The restream area's replies: their types, parsing, the endpoints that give them and the
typed reads of the poller.

The admin API passes the same endpoints through (``Operations.send``); ``RestreamReader`` is
what the poller reads with (its ``RestreamClient``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from exporter.support.offloop import off_loop
from exporter.upstream.client import UpstreamClient
from exporter.upstream.endpoint import READ_LANES, Endpoint
from exporter.upstream.fields import fail, flag, lst, number, obj, optional_number, text

T = TypeVar("T")

_BASE = "/app/restream/v2/{account}"
RESTREAM_LIST = Endpoint("restream", "restream_list", "GET", _BASE + "/resources", lanes=READ_LANES)
RESTREAM_CREATE = Endpoint("restream", "restream_create", "POST", _BASE + "/resources")
RESTREAM_GET = Endpoint(
    "restream", "restream_get", "GET", _BASE + "/resources/{resource_id}", lanes=READ_LANES
)
RESTREAM_UPDATE = Endpoint("restream", "restream_update", "PUT", _BASE + "/resources/{resource_id}")
RESTREAM_STATUS = Endpoint(
    "restream",
    "restream_status",
    "GET",
    _BASE + "/status",
    params=("resource_id",),
    lanes=READ_LANES,
)
RESTREAM_HISTORY = Endpoint(
    "restream",
    "restream_history",
    "GET",
    _BASE + "/history",
    params=("resource_id", "start", "end"),
    lanes=READ_LANES,
)
ENDPOINTS = (
    RESTREAM_LIST,
    RESTREAM_CREATE,
    RESTREAM_GET,
    RESTREAM_UPDATE,
    RESTREAM_STATUS,
    RESTREAM_HISTORY,
)


def status_query(resource_id: str | None) -> dict[str, str] | None:
    """``/status``'s query: one resource, or every one (no ``resource_id``)."""
    return {"resource_id": resource_id} if resource_id else None


def history_query(resource_id: str, start: str, end: str) -> dict[str, str]:
    """``/history``'s query: one resource's points between two times."""
    return {"resource_id": resource_id, "start": start, "end": end}


@dataclass(frozen=True)
class ScheduleWindow:
    start: str
    stop: str


@dataclass(frozen=True)
class RestreamEntry:
    source: str
    target_url: str
    target_key: str
    transcoded: bool = False
    transcode_quality: str = ""
    target_type: str = ""
    login: str = ""
    password: str = ""
    schedule: tuple[ScheduleWindow, ...] = ()
    backup_url: str = ""
    backup_login: str = ""
    backup_password: str = ""


@dataclass(frozen=True)
class RestreamResource:
    resource_id: str
    name: str
    type: str
    active: bool
    restreams: tuple[RestreamEntry, ...] = ()
    creation_ts: float = 0
    modification_ts: float = 0


def _entry(item: Any, where: str) -> RestreamEntry:
    d = obj(item, "restream", where)
    sched = []
    for j, w in enumerate(lst(d.get("schedule") or [], "restream", f"{where}.schedule")):
        wd = obj(w, "restream", f"{where}.schedule[{j}]")
        sched.append(
            ScheduleWindow(
                text(wd, "start", "restream", f"{where}.schedule[{j}]"),
                text(wd, "stop", "restream", f"{where}.schedule[{j}]"),
            )
        )
    backup = d.get("backup") or {}
    backup = obj(backup, "restream", f"{where}.backup")
    return RestreamEntry(
        source=text(d, "source", "restream", where),
        target_url=text(d, "target_url", "restream", where),
        target_key=text(d, "target_key", "restream", where, default=""),
        transcoded=bool(d.get("transcoded", False)),
        transcode_quality=str(d.get("transcode_quality") or ""),
        target_type=str(d.get("target_type") or ""),
        login=str(d.get("login") or ""),
        password=str(d.get("password") or ""),
        schedule=tuple(sched),
        backup_url=str(backup.get("target_url") or ""),
        backup_login=str(backup.get("login") or ""),
        backup_password=str(backup.get("password") or ""),
    )


def parse_restream_resource(item: Any, where: str = "resource") -> RestreamResource:
    d = obj(item, "restream", where)
    rid = d.get("resource_id")
    if not isinstance(rid, str | int) or rid == "":
        raise fail("restream", f"{where}.resource_id", "missing")
    restreams = lst(d.get("restreams") or [], "restream", f"{where}.restreams")
    return RestreamResource(
        resource_id=str(rid),
        name=str(d.get("name") or ""),
        type=str(d.get("type") or ""),
        active=flag(d, "active", "restream", where, default=False),
        restreams=tuple(_entry(e, f"{where}.restreams[{j}]") for j, e in enumerate(restreams)),
        creation_ts=optional_number(d, "creation_ts", "restream", where),
        modification_ts=optional_number(d, "modification_ts", "restream", where),
    )


def parse_restream_resources(body: Any) -> list[RestreamResource]:
    d = obj(body, "restream", "resources reply")
    data = obj(d.get("data"), "restream", "resources reply.data")
    items = lst(data.get("resources"), "restream", "data.resources")
    return [parse_restream_resource(r, f"data.resources[{i}]") for i, r in enumerate(items)]


@dataclass(frozen=True)
class TargetStatus:
    source: str
    target_url: str
    target_key: str
    code: int
    description: str


@dataclass(frozen=True)
class StatusRecord:
    resource_id: str
    targets: tuple[TargetStatus, ...]


# A restream code is a small integer; 32 bits is far beyond any the platform documents, and an
# integer past the float range would otherwise reach a gauge as OverflowError.
_CODE_LIMIT = 2**31
# Unix seconds a history point may carry: 1970 to year 9999, what a UTC timestamp can show.
_TIME_LIMIT = 253_402_300_799


def status_code(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or abs(value) >= _CODE_LIMIT:
        raise fail("restream", where, f"expected an integer status code, got {value!r:.40}")
    return value


def unix_time(d: dict[str, Any], where: str) -> float:
    seconds = number(d, "time", "restream", where)
    if not 0 <= seconds <= _TIME_LIMIT:
        raise fail("restream", f"{where}.time", f"expected Unix seconds, got {seconds!r:.40}")
    return seconds


def parse_restream_status(body: Any) -> list[StatusRecord]:
    d = obj(body, "restream", "status reply")
    out = []
    for i, rec in enumerate(lst(d.get("data"), "restream", "status reply.data")):
        r = obj(rec, "restream", f"data[{i}]")
        targets = []
        for j, e in enumerate(lst(r.get("status") or [], "restream", f"data[{i}].status")):
            where = f"data[{i}].status[{j}]"
            ed = obj(e, "restream", where)
            st = obj(ed.get("status"), "restream", f"{where}.status")
            code = status_code(st.get("code"), f"{where}.status.code")
            targets.append(
                TargetStatus(
                    source=str(ed.get("source") or ""),
                    target_url=str(ed.get("target_url") or ""),
                    target_key=str(ed.get("target_key") or ""),
                    code=code,
                    description=str(st.get("description") or ""),
                )
            )
        out.append(StatusRecord(str(r.get("resource_id", "")), tuple(targets)))
    return out


@dataclass(frozen=True)
class HistoryPoint:
    source: str
    target_url: str
    target_key: str
    code: int
    description: str
    time: float


def parse_restream_history(body: Any) -> list[HistoryPoint]:
    d = obj(body, "restream", "history reply")
    out = []
    for i, item in enumerate(lst(d.get("data"), "restream", "history reply.data")):
        it = obj(item, "restream", f"data[{i}]")
        source = str(it.get("source") or "")
        hist = obj(it.get("history") or {}, "restream", f"data[{i}].history")
        for url, keys in hist.items():
            for key, points in obj(keys, "restream", f"data[{i}].history[url]").items():
                for p in lst(points, "restream", f"data[{i}].history[url][key]"):
                    pd = obj(p, "restream", f"data[{i}].history point")
                    code = status_code(pd.get("code"), f"data[{i}].history point.code")
                    out.append(
                        HistoryPoint(
                            source,
                            str(url),
                            str(key),
                            code,
                            str(pd.get("description") or ""),
                            unix_time(pd, f"data[{i}].history point"),
                        )
                    )
    return out


class RestreamReader:
    """The restream poller's typed reads (its ``RestreamClient``), sent by ``upstream``."""

    def __init__(self, upstream: UpstreamClient) -> None:
        self._upstream = upstream

    async def restream_resources(self, account: str) -> list[RestreamResource]:
        box = [await self._upstream.read(RESTREAM_LIST, account)]
        # checking and building grows with the resources: off the event loop
        return await off_loop(_taken, parse_restream_resources, box)

    async def restream_resource(self, account: str, resource_id: str) -> RestreamResource:
        reply = await self._upstream.read(RESTREAM_GET, account, resource_id=resource_id)
        data = obj(reply, "restream", "resource reply")
        item = dict(obj(data.get("data"), "restream", "resource reply.data"))
        if item.get("resource_id") in (None, ""):  # the id is echoed beside "data"
            item["resource_id"] = data.get("resource_id") or resource_id
        return parse_restream_resource(item)

    async def restream_status(
        self, account: str, resource_id: str | None = None
    ) -> list[StatusRecord]:
        box = [await self._upstream.read(RESTREAM_STATUS, account, status_query(resource_id))]
        return await off_loop(_taken, parse_restream_status, box)

    async def restream_history(
        self, account: str, resource_id: str, start: str, end: str
    ) -> list[HistoryPoint]:
        params = history_query(resource_id, start, end)
        data = await self._upstream.read(RESTREAM_HISTORY, account, params)
        return parse_restream_history(data)


def _taken(parse: Callable[[Any], T], box: list[Any]) -> T:
    """``parse(decoded)`` on the refresh thread, the decoded reply taken out of ``box`` (its
    only other holder), so what the parse does not keep is freed there, not on the loop."""
    return parse(box.pop())
