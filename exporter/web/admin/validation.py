"""Pure checks of admin requests (common, restream, DVR, query names); each problem names its field.

Talking-head rules live in ``validation_th``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

ISO_Z = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z")
# Ids the platform hands out (numeric resource ids, hex or UUID task ids): the one definition,
# used by the checks below and by the OpenAPI document.
ID_PATTERN = "^[A-Za-z0-9_-]{1,64}$"
ID_PARAMS = ("resource_id", "task_id")
_ID = re.compile(ID_PATTERN)
_ID_MESSAGE = "expected 1-64 letters, digits, '-' or '_' (an id the platform hands out)"

RESOURCE_TYPES: dict[str, tuple[type, ...]] = {
    "resource_id": (str, int),
    "name": (str,),
    "type": (str,),
    "active": (bool,),
    "restreams": (list,),
    "creation_ts": (int,),
    "modification_ts": (int,),
}
ENTRY_TYPES: dict[str, tuple[type, ...]] = {
    "schedule": (list,),
    "source": (str,),
    "transcoded": (bool,),
    "transcode_quality": (str,),
    "target_type": (str,),
    "target_url": (str,),
    "target_key": (str,),
    "login": (str,),
    "password": (str,),
    "backup": (dict,),
}
BACKUP_FIELDS = ("target_url", "login", "password")
DVR_RANGE_FIELDS = ("host", "from_ts", "duration_sec", "to_ts")


@dataclass(frozen=True)
class FieldError:
    """One bad field: its dotted path (``restreams[0].schedule[1].start``) and what is wrong."""

    field: str
    message: str

    def as_dict(self) -> dict[str, str]:
        return {"field": self.field, "message": self.message}


class Problems:
    """Collects every problem of one request, so the caller hears about all of them at once."""

    def __init__(self) -> None:
        self.items: list[FieldError] = []

    def add(self, field: str, message: str) -> None:
        self.items.append(FieldError(field, message))

    def __bool__(self) -> bool:
        return bool(self.items)


# --- small type predicates ----------------------------------------------------------------
def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _type_name(types: tuple[type, ...]) -> str:
    names = {
        str: "a string",
        int: "an integer",
        bool: "true or false",
        list: "a list",
        dict: "an object",
    }
    return " or ".join(names.get(t, t.__name__) for t in types)


def _has_type(value: Any, types: tuple[type, ...]) -> bool:
    if isinstance(value, bool):
        return bool in types
    return isinstance(value, types)


def _join(prefix: str, key: str) -> str:
    return f"{prefix}.{key}" if prefix else key


def unknown_fields(p: Problems, data: Mapping[str, Any], known: Sequence[str], prefix: str) -> None:
    for key in data:
        if key not in known:
            p.add(_join(prefix, str(key)), f"unknown parameter; known: {', '.join(known)}")


def parse_iso_z(value: str) -> datetime | None:
    """``YYYY-MM-DDThh:mm:ssZ`` -> aware datetime, None when the form or the date is wrong."""
    if not ISO_Z.fullmatch(value):
        return None
    try:
        return datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return None


# --- restream -------------------------------------------------------------------------------
def check_restream_resource(body: Any) -> list[FieldError]:
    """Types of a create/update body; schedule windows in ISO 8601 ``Z`` form with start < stop.

    Unknown top-level fields pass through (the platform may know more than the spec shows);
    every entry needs ``source`` and ``target_url``.
    """
    p = Problems()
    if not isinstance(body, dict):
        p.add("body", "expected a JSON object (the restream resource)")
        return p.items
    for key, types in RESOURCE_TYPES.items():
        if key in body and not _has_type(body[key], types):
            p.add(key, f"expected {_type_name(types)}")
    restreams = body.get("restreams")
    if isinstance(restreams, list):
        for i, entry in enumerate(restreams):
            _check_entry(p, entry, f"restreams[{i}]")
    return p.items


def _check_entry(p: Problems, entry: Any, where: str) -> None:
    if not isinstance(entry, dict):
        p.add(where, "expected an object (a restream entry)")
        return
    for key, types in ENTRY_TYPES.items():
        if key in entry and not _has_type(entry[key], types):
            p.add(f"{where}.{key}", f"expected {_type_name(types)}")
    for key in ("source", "target_url"):
        if key not in entry:
            p.add(f"{where}.{key}", "required in every restream entry")
        elif isinstance(entry[key], str) and not entry[key].strip():
            p.add(f"{where}.{key}", "must not be empty")
    backup = entry.get("backup")
    if isinstance(backup, dict):
        for key in BACKUP_FIELDS:
            if key in backup and not isinstance(backup[key], str):
                p.add(f"{where}.backup.{key}", "expected a string")
        unknown_fields(p, backup, BACKUP_FIELDS, f"{where}.backup")
    schedule = entry.get("schedule")
    if isinstance(schedule, list):
        for j, window in enumerate(schedule):
            _check_window(p, window, f"{where}.schedule[{j}]")


def _check_window(p: Problems, window: Any, where: str) -> None:
    if not isinstance(window, dict):
        p.add(where, "expected an object with start and stop")
        return
    times: dict[str, datetime] = {}
    for key in ("start", "stop"):
        value = window.get(key)
        if value is None:
            p.add(f"{where}.{key}", "required (YYYY-MM-DDThh:mm:ssZ)")
        elif not isinstance(value, str) or (parsed := parse_iso_z(value)) is None:
            p.add(f"{where}.{key}", "expected an ISO 8601 UTC time YYYY-MM-DDThh:mm:ssZ")
        else:
            times[key] = parsed
    unknown_fields(p, window, ("start", "stop"), where)
    if len(times) == 2 and times["start"] >= times["stop"]:
        p.add(f"{where}.stop", "must be later than start")


def check_history_query(query: Mapping[str, str]) -> list[FieldError]:
    """``resource_id``, ``start`` and ``end`` are required; times ``YYYY-mm-ddTHH:MM:SSZ``."""
    p = Problems()
    if not query.get("resource_id", "").strip():
        p.add("resource_id", "required (the restream resource whose history to read)")
    elif not _ID.fullmatch(query["resource_id"]):
        p.add("resource_id", _ID_MESSAGE)
    times: dict[str, datetime] = {}
    for key in ("start", "end"):
        value = query.get(key)
        if value is None or value == "":
            p.add(key, "required (YYYY-mm-ddTHH:MM:SSZ)")
        elif (parsed := parse_iso_z(value)) is None:
            p.add(key, "expected an ISO 8601 UTC time YYYY-mm-ddTHH:MM:SSZ")
        else:
            times[key] = parsed
    if len(times) == 2 and times["start"] >= times["end"]:
        p.add("end", "must be later than start")
    return p.items


def check_status_query(query: Mapping[str, str]) -> list[FieldError]:
    if "resource_id" in query and not query["resource_id"].strip():
        return [FieldError("resource_id", "must not be empty when given")]
    if "resource_id" in query and not _ID.fullmatch(query["resource_id"]):
        return [FieldError("resource_id", _ID_MESSAGE)]
    return []


# --- DVR ------------------------------------------------------------------------------------
def check_dvr_delete(body: Any) -> list[FieldError]:
    """Range: ``host``, ``from_ts`` and exactly one of ``duration_sec``/``to_ts``; or
    everything: ``host`` and ``all: true``. Nothing else is accepted."""
    p = Problems()
    if not isinstance(body, dict):
        p.add(
            "body", "expected a JSON object: {host, from_ts, duration_sec | to_ts} or {host, all}"
        )
        return p.items
    host = body.get("host")
    if host is None:
        p.add("host", "required: a node identifier, or * for all nodes")
    elif not isinstance(host, str) or not host.strip():
        p.add("host", "expected a non-empty string (a node identifier, or *)")
    if "all" in body:
        if body["all"] is not True:
            p.add("all", "must be true to delete the whole archive (omit it to delete a range)")
        for key in ("from_ts", "duration_sec", "to_ts"):
            if key in body:
                p.add(key, "not allowed together with all")
        unknown_fields(p, body, ("host", "all"), "")
        return p.items
    unknown_fields(p, body, DVR_RANGE_FIELDS, "")
    from_ts = body.get("from_ts")
    if from_ts is None:
        p.add("from_ts", "required: start of the range (integer Unix seconds)")
    elif not is_int(from_ts) or from_ts < 0:
        p.add("from_ts", "expected a non-negative integer (Unix seconds)")
        from_ts = None
    given = [k for k in ("duration_sec", "to_ts") if body.get(k) is not None]
    if not given:
        p.add("duration_sec", "give exactly one of duration_sec or to_ts (or all: true)")
    elif len(given) == 2:
        p.add("to_ts", "give exactly one of duration_sec or to_ts, not both")
    duration = body.get("duration_sec")
    if duration is not None and (not is_int(duration) or duration <= 0):
        p.add("duration_sec", "expected a positive integer (seconds)")
    to_ts = body.get("to_ts")
    if to_ts is not None:
        if not is_int(to_ts) or to_ts < 0:
            p.add("to_ts", "expected a non-negative integer (Unix seconds)")
        elif is_int(from_ts) and to_ts <= from_ts:
            p.add("to_ts", "must be later than from_ts")
    return p.items


def check_stream_name(name: str) -> list[FieldError]:
    """A stream name may contain ``/`` but no empty, ``.`` or ``..`` segment."""
    segments = name.split("/")
    if any(s in ("", ".", "..") for s in segments) or _has_control(name):
        return [FieldError("stream_name", "not a valid stream name (empty, '.' or '..' part)")]
    return []


def check_segment(field: str, value: str) -> list[FieldError]:
    if field in ID_PARAMS:
        return [] if _ID.fullmatch(value) else [FieldError(field, _ID_MESSAGE)]
    if value in ("", ".", "..") or _has_control(value):
        return [FieldError(field, "not a valid identifier")]
    return []


def path_param_schema(name: str) -> dict[str, str]:
    """The OpenAPI schema of a path parameter."""
    return {"type": "string", "pattern": ID_PATTERN} if name in ID_PARAMS else {"type": "string"}


def _has_control(text: str) -> bool:
    return any(ord(c) < 32 or ord(c) == 127 for c in text)


def check_query_names(
    pairs: Sequence[tuple[str, str]], known: Sequence[str]
) -> tuple[dict[str, str], list[FieldError]]:
    """Reject unknown and repeated query parameters; return the rest as a plain mapping."""
    p = Problems()
    seen: dict[str, str] = {}
    for key, value in pairs:
        if key not in known:
            hint = f"; known: {', '.join(known)}" if known else "; this operation takes none"
            p.add(key, f"unknown query parameter{hint}")
        elif key in seen:
            p.add(key, "given more than once")
        else:
            seen[key] = value
    return seen, p.items
