"""Typed models of the platform's replies, parsed strictly where we rely on a field."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, TypeVar

from exporter.upstream.errors import UpstreamError

T = TypeVar("T")


def _fail(area: str, where: str, what: str) -> UpstreamError:
    return UpstreamError(area, "invalid_body", f"{where}: {what}", 200)


def obj(value: Any, area: str, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _fail(area, where, f"expected an object, got {type(value).__name__}")
    return value


def lst(value: Any, area: str, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise _fail(area, where, f"expected a list, got {type(value).__name__}")
    return value


def text(d: dict[str, Any], key: str, area: str, where: str, default: str | None = None) -> str:
    value = d.get(key, default)
    if not isinstance(value, str):
        raise _fail(area, f"{where}.{key}", f"expected a string, got {value!r:.40}")
    return value


def number(
    d: dict[str, Any], key: str, area: str, where: str, default: float | None = None
) -> float:
    value = d.get(key, default)
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:  # an int beyond the float range overflows
            number = float(value)
        except OverflowError:
            number = math.inf
        if math.isfinite(number):
            return number
    raise _fail(area, f"{where}.{key}", f"expected a finite number, got {value!r:.40}")


def optional_number(d: dict[str, Any], key: str, area: str, where: str) -> float:
    """A number that may be missing or null (then 0); anything else but a number is refused."""
    value = d.get(key)
    if value is None or value == "":
        return 0.0
    return number(d, key, area, where)


def flag(d: dict[str, Any], key: str, area: str, where: str, default: bool | None = None) -> bool:
    value = d.get(key, default)
    if not isinstance(value, bool):
        raise _fail(area, f"{where}.{key}", f"expected true or false, got {value!r:.40}")
    return value


# --- accounts and token -------------------------------------------------------------------
@dataclass(frozen=True)
class AccountInfo:
    name: str
    status: str


def parse_accounts(body: Any) -> list[AccountInfo]:
    out = []
    for i, item in enumerate(lst(body, "auth", "accounts")):
        d = obj(item, "auth", f"accounts[{i}]")
        out.append(AccountInfo(text(d, "name", "auth", f"accounts[{i}]"), str(d.get("status", ""))))
    return out


def parse_token(body: Any) -> tuple[str, float]:
    """(token, lifetime in seconds) from the token endpoint's reply.

    The token is ``token`` (as sent) or ``auth_token`` (as one docs table names it); any
    prefix (``cdn1_``, ``cdn2_``) is kept. ``lifetime`` is in milliseconds.
    """
    d = obj(body, "auth", "token reply")
    key = "token" if "token" in d or "auth_token" not in d else "auth_token"
    token = text(d, key, "auth", "token reply")
    if not token:
        raise _fail("auth", f"token reply.{key}", "empty token")
    lifetime_ms = number(d, "lifetime", "auth", "token reply", default=21_599_000)
    return token, lifetime_ms / 1000.0


# --- restream -------------------------------------------------------------------------------
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
        raise _fail("restream", f"{where}.resource_id", "missing")
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
        raise _fail("restream", where, f"expected an integer status code, got {value!r:.40}")
    return value


def unix_time(d: dict[str, Any], where: str) -> float:
    seconds = number(d, "time", "restream", where)
    if not 0 <= seconds <= _TIME_LIMIT:
        raise _fail("restream", f"{where}.time", f"expected Unix seconds, got {seconds!r:.40}")
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


# --- DVR ------------------------------------------------------------------------------------
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
    return out


# --- talking head ---------------------------------------------------------------------------
@dataclass(frozen=True)
class ThConfigurations:
    voices: dict[str, Any]
    models: dict[str, Any]
    backgrounds: dict[str, Any]
    quota_limit: float
    quota_left: float
    watermark: bool

    @property
    def model_count(self) -> int:
        """Speaker models counted per (speaker, version)."""
        return sum(len(v) if isinstance(v, dict) else 1 for v in self.models.values())


def parse_th_configurations(body: Any) -> ThConfigurations:
    d = obj(body, "talking_head", "configurations")
    quota = obj(d.get("quota"), "talking_head", "configurations.quota")
    return ThConfigurations(
        voices=obj(d.get("voices") or {}, "talking_head", "configurations.voices"),
        models=obj(d.get("models") or {}, "talking_head", "configurations.models"),
        backgrounds=obj(d.get("backgrounds") or {}, "talking_head", "configurations.backgrounds"),
        quota_limit=number(quota, "limit", "talking_head", "configurations.quota"),
        quota_left=number(quota, "left", "talking_head", "configurations.quota"),
        watermark=flag(d, "watermark", "talking_head", "configurations", default=False),
    )


def configurations_body(conf: ThConfigurations) -> dict[str, Any]:
    """A configurations reply as the platform sends it, rebuilt from what was parsed."""

    def whole(value: float) -> int | float:
        return int(value) if float(value).is_integer() else value

    return {
        "status": "ok",
        "voices": dict(conf.voices),
        "models": dict(conf.models),
        "backgrounds": dict(conf.backgrounds),
        "quota": {"limit": whole(conf.quota_limit), "left": whole(conf.quota_left)},
        "watermark": conf.watermark,
    }


@dataclass(frozen=True)
class ThTask:
    id: str
    status: str  # lower-case
    attempts: int
    message: str


def parse_th_status(body: Any) -> ThTask:
    d = obj(body, "talking_head", "status reply")
    t = obj(d.get("task"), "talking_head", "status reply.task")
    return ThTask(
        id=str(t.get("id") or ""),
        status=text(t, "status", "talking_head", "task").strip().lower(),
        attempts=int(optional_number(t, "attempts", "talking_head", "task")),
        message=str(t.get("message") or ""),
    )
