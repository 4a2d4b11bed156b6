"""Pure checks of admin requests (common, restream, DVR, query names); each problem names its field.

Talking-head rules live in ``validation_th``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

# The rules below are the single source of the admin API's request rules: the checks here
# apply them and ``openapi`` writes them into the document (patterns, lengths, types, enums).

# A real calendar day, years 1000-9999 (leap years included), as one regular expression.
# [0-9], not \d: Python's \d also matches other scripts' digits, JSON Schema's does not.
DAY = (
    r"(?:[1-9][0-9]{3}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])"
    r"|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|02-(?:0[1-9]|1[0-9]|2[0-8]))"
    r"|[1-9][0-9](?:0[48]|[2468][048]|[13579][26])-02-29"
    r"|(?:[2468][048]|[13579][26])00-02-29)"
)
MINUTE = r"(?:[01][0-9]|2[0-3]):[0-5][0-9]"
ISO_Z = re.compile(DAY + "T" + MINUTE + r":[0-5][0-9]Z")  # 2026-01-31T23:59:59Z
# Searched for: one character that is not white space. The set is spelt out: Python's \s and
# JSON Schema's (ECMA) \s differ (\x1c-\x1f, \x85, \ufeff); this counts all of them as space.
SPACE = r"\t\n\v\f\r \x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
NON_BLANK = re.compile(f"[^{SPACE}]")
# The end of the text, in Python and ECMA alike (Python's $ also matches before a final \n).
END = r"(?![\s\S])"
# An id the platform hands out (numeric resource ids, hex or UUID task ids): resource_id and
# task_id, in a path or a query. The one definition; ``schemas`` writes it into the document.
SEGMENT = re.compile(r"[A-Za-z0-9_-]{1,64}")
_ID_MESSAGE = "expected 1-64 letters, digits, '-' or '_' (an id the platform hands out)"
# A stream name part: not empty, "." or "..", no control character and no "/".
_PART = rf"(?!\.\.?(?:/|{END}))[^\x00-\x1f\x7f/]+"
# A stream name: parts as above (no "/" in them) joined by "/".
STREAM_NAME = re.compile(f"{_PART}(?:/{_PART})*")

# Fields of a restream create/update body; anything else is refused (see check_restream_resource).
RESOURCE_TYPES: dict[str, tuple[type, ...]] = {
    "name": (str,),
    "type": (str,),
    "active": (bool,),
    "restreams": (list,),
    "resource_id": (str, int),
    "creation_ts": (int,),
    "modification_ts": (int,),
}
# Assigned by the platform: accepted (a resource read back can be sent again), never sent on.
READ_ONLY_FIELDS = ("resource_id", "creation_ts", "modification_ts")
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
# The platform's create and update body: every one of these, name not empty.
RESOURCE_REQUIRED = ("name", "type", "active", "restreams")
ENTRY_REQUIRED = ("source", "target_url")  # non-blank strings in every entry
BACKUP_FIELDS = ("target_url", "login", "password")  # all or nothing: {} or with target_url
BACKUP_REQUIRED = ("target_url",)
WINDOW_FIELDS = ("start", "stop")
DVR_RANGE_FIELDS = ("host", "from_ts", "duration_sec", "to_ts")
DVR_ALL_FIELDS = ("host", "all")
DVR_MINIMUM = {"from_ts": 0, "duration_sec": 1, "to_ts": 0}  # integers, Unix seconds / seconds

# Rules JSON Schema cannot say (they compare fields, or need the platform's state); the
# document lists them with each operation, and a schema-valid request may still break them.
SCHEDULE_ORDER = "in every schedule window, stop is later than start"
MASK_ON_CREATE = "a mask (********) cannot stand for a secret on create: nothing is stored yet"
MASK_ON_UPDATE = (
    "a mask stands for a stored secret only as read (********#<fingerprint>), as the whole value "
    "of a secret field, a URL password or a URL query value, and only in the slot it was read "
    "from (same entry, same field, same host) where it matches exactly one secret of the "
    "resource; any other mask is refused"
)
HISTORY_DAYS = 31  # the platform refuses a longer history period
HISTORY_ORDER = f"end is later than start, and at most {HISTORY_DAYS} days later"
DVR_ORDER = "to_ts is later than from_ts"


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


def is_blank(value: str) -> bool:
    return NON_BLANK.search(value) is None


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

    Unknown fields are refused at every level, like everywhere in the admin API (a typo must
    not go upstream). Every entry needs ``source`` and ``target_url``, which also identify it
    for secret keeping.
    """
    p = Problems()
    if not isinstance(body, dict):
        p.add("body", "expected a JSON object (the restream resource)")
        return p.items
    unknown_fields(p, body, tuple(RESOURCE_TYPES), "")
    for key, types in RESOURCE_TYPES.items():
        if key in body and not _has_type(body[key], types):
            p.add(key, f"expected {_type_name(types)}")
    for key in RESOURCE_REQUIRED:
        if key not in body:
            p.add(key, "required in a restream resource (the platform needs it)")
    if body.get("name") == "":
        p.add("name", "must not be empty")
    restreams = body.get("restreams")
    if isinstance(restreams, list):
        for i, entry in enumerate(restreams):
            _check_entry(p, entry, f"restreams[{i}]")
    return p.items


def without_read_only(body: dict[str, Any]) -> dict[str, Any]:
    """A checked create/update body without the fields the platform assigns."""
    return {k: v for k, v in body.items() if k not in READ_ONLY_FIELDS}


def _check_entry(p: Problems, entry: Any, where: str) -> None:
    if not isinstance(entry, dict):
        p.add(where, "expected an object (a restream entry)")
        return
    for key, types in ENTRY_TYPES.items():
        if key in entry and not _has_type(entry[key], types):
            p.add(f"{where}.{key}", f"expected {_type_name(types)}")
    unknown_fields(p, entry, tuple(ENTRY_TYPES), where)
    for key in ENTRY_REQUIRED:
        if key not in entry:
            p.add(f"{where}.{key}", "required in every restream entry")
        elif isinstance(entry[key], str) and is_blank(entry[key]):
            p.add(f"{where}.{key}", "must not be empty")
    backup = entry.get("backup")
    if isinstance(backup, dict):
        for key in BACKUP_FIELDS:
            if key in backup and not isinstance(backup[key], str):
                p.add(f"{where}.backup.{key}", "expected a string")
        unknown_fields(p, backup, BACKUP_FIELDS, f"{where}.backup")
        for key in BACKUP_REQUIRED:
            if backup and key not in backup:
                p.add(f"{where}.backup.{key}", "required unless backup is empty ({})")
    schedule = entry.get("schedule")
    if isinstance(schedule, list):
        for j, window in enumerate(schedule):
            _check_window(p, window, f"{where}.schedule[{j}]")


def _check_window(p: Problems, window: Any, where: str) -> None:
    if not isinstance(window, dict):
        p.add(where, "expected an object with start and stop")
        return
    times: dict[str, datetime] = {}
    for key in WINDOW_FIELDS:
        value = window.get(key)
        if value is None:
            p.add(f"{where}.{key}", "required (YYYY-MM-DDThh:mm:ssZ)")
        elif not isinstance(value, str) or (parsed := parse_iso_z(value)) is None:
            p.add(f"{where}.{key}", "expected an ISO 8601 UTC time YYYY-MM-DDThh:mm:ssZ")
        else:
            times[key] = parsed
    unknown_fields(p, window, WINDOW_FIELDS, where)
    if len(times) == 2 and times["start"] >= times["stop"]:
        p.add(f"{where}.stop", "must be later than start")


def check_history_query(query: Mapping[str, str]) -> list[FieldError]:
    """``resource_id``, ``start`` and ``end`` are required; times ``YYYY-mm-ddTHH:MM:SSZ``."""
    p = Problems()
    if is_blank(query.get("resource_id", "")):
        p.add("resource_id", "required (the restream resource whose history to read)")
    elif not SEGMENT.fullmatch(query["resource_id"]):
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
    elif len(times) == 2 and times["end"] - times["start"] > timedelta(days=HISTORY_DAYS):
        p.add("end", f"at most {HISTORY_DAYS} days after start (the platform keeps no longer)")
    return p.items


def check_status_query(query: Mapping[str, str]) -> list[FieldError]:
    if "resource_id" in query and is_blank(query["resource_id"]):
        return [FieldError("resource_id", "must not be empty when given")]
    if "resource_id" in query and not SEGMENT.fullmatch(query["resource_id"]):
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
    elif not isinstance(host, str) or is_blank(host):
        p.add("host", "expected a non-empty string (a node identifier, or *)")
    if "all" in body:
        if body["all"] is not True:
            p.add("all", "must be true to delete the whole archive (omit it to delete a range)")
        for key in ("from_ts", "duration_sec", "to_ts"):
            if key in body:
                p.add(key, "not allowed together with all")
        unknown_fields(p, body, DVR_ALL_FIELDS, "")
        return p.items
    unknown_fields(p, body, DVR_RANGE_FIELDS, "")
    from_ts = body.get("from_ts")
    if from_ts is None:
        p.add("from_ts", "required: start of the range (integer Unix seconds)")
    elif not is_int(from_ts) or from_ts < DVR_MINIMUM["from_ts"]:
        p.add("from_ts", "expected a non-negative integer (Unix seconds)")
        from_ts = None
    given = [k for k in ("duration_sec", "to_ts") if body.get(k) is not None]
    if not given:
        p.add("duration_sec", "give exactly one of duration_sec or to_ts (or all: true)")
    elif len(given) == 2:
        p.add("to_ts", "give exactly one of duration_sec or to_ts, not both")
    duration = body.get("duration_sec")
    if duration is not None and (not is_int(duration) or duration < DVR_MINIMUM["duration_sec"]):
        p.add("duration_sec", "expected a positive integer (seconds)")
    to_ts = body.get("to_ts")
    if to_ts is not None:
        if not is_int(to_ts) or to_ts < DVR_MINIMUM["to_ts"]:
            p.add("to_ts", "expected a non-negative integer (Unix seconds)")
        elif is_int(from_ts) and to_ts <= from_ts:
            p.add("to_ts", "must be later than from_ts")
    return p.items


def check_stream_name(name: str) -> list[FieldError]:
    """A stream name may contain ``/`` but no empty, ``.`` or ``..`` segment."""
    if not STREAM_NAME.fullmatch(name):
        return [FieldError("stream_name", "not a valid stream name (empty, '.' or '..' part)")]
    return []


def check_segment(field: str, value: str) -> list[FieldError]:
    if not SEGMENT.fullmatch(value):
        return [FieldError(field, _ID_MESSAGE)]
    return []


MAX_QUERY_NAME = 64  # longer parameter names are refused without being quoted back
MAX_QUERY_VALUE = 512  # characters of any query value (the longest valid ones are far shorter)


def check_query_names(
    pairs: Sequence[tuple[str, str]], known: Sequence[str]
) -> tuple[dict[str, str], list[FieldError]]:
    """Reject unknown, repeated and overlong query parameters; return the rest as a plain
    mapping."""
    p = Problems()
    seen: dict[str, str] = {}
    for key, value in pairs:
        if len(key) > MAX_QUERY_NAME:
            p.add("query", f"a parameter name longer than {MAX_QUERY_NAME} characters")
        elif key not in known:
            hint = f"; known: {', '.join(known)}" if known else "; this operation takes none"
            p.add(key, f"unknown query parameter{hint}")
        elif key in seen:
            p.add(key, "given more than once")
        elif len(value) > MAX_QUERY_VALUE:
            p.add(key, f"longer than {MAX_QUERY_VALUE} characters")
        else:
            seen[key] = value
    return seen, p.items
