"""Pure checks of admin requests against the platform spec's rules; each problem names its field."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from exporter.upstream.models import ThConfigurations

SCRIPT_MAX = 3000
VIDEO_NAME_MAX = 35

ISO_Z = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z")
# /tasks dates: year-month-dayThours:minutes:seconds+tz, seconds 00, UTC.
TASK_DATE = re.compile(r"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}):(\d{2})(Z|[+-]\d{2}:?\d{2})?")
HEX_COLOUR = re.compile(r"#(?:[0-9A-Fa-f]{3}|[0-9A-Fa-f]{6})")
MODEL_VERSION = re.compile(r"\d+\.\d+\.\d+|latest")

ORIENTATIONS = ("horizontal", "vertical")
FRAME_STYLES = ("rectangle", "circle")
LOCATIONS = ("upperleft", "upperright", "lowerleft", "lowerright")
ACTOR_SIZES = ("SD", "HD", "FullHD", "4K")

GENERATE_FIELDS = (
    "script",
    "actor",
    "voice",
    "background",
    "emotion",
    "video_name",
    "composition",
    "circle",
)
ACTOR_FIELDS = ("name", "version", "style", "shot", "size")
COMPOSITION_FIELDS = (
    "orientation",
    "frame_style",
    "scale",
    "crop",
    "shift",
    "location",
    "background_color",
    "border_color",
)
RECTANGLE_ONLY = ("scale", "crop", "shift")
CIRCLE_ONLY = ("location", "background_color", "border_color")
CIRCLE_FIELDS = ("location", "border_color", "background_color")

VIDEO_BASE_FIELDS = ("id", "video_url", "resolution", "duration", "date")
VIDEO_EXTRA_FIELDS = (
    "background",
    "shot",
    "script",
    "voice_name",
    "actor_name",
    "model_version",
    "video_name",
    "emotion",
    "orientation",
    "crop",
    "shift",
    "scale",
    "circle",
)
TASKS_QUERY = ("start", "end", "offset", "limit", "sort", "fields", "id")

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


def _unknown(p: Problems, data: Mapping[str, Any], known: Sequence[str], prefix: str) -> None:
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
    every entry needs ``source`` and ``target_url``, which also identify it for secret keeping.
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
        _unknown(p, backup, BACKUP_FIELDS, f"{where}.backup")
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
    _unknown(p, window, ("start", "stop"), where)
    if len(times) == 2 and times["start"] >= times["stop"]:
        p.add(f"{where}.stop", "must be later than start")


def check_history_query(query: Mapping[str, str]) -> list[FieldError]:
    """``resource_id``, ``start`` and ``end`` are required; times ``YYYY-mm-ddTHH:MM:SSZ``."""
    p = Problems()
    if not query.get("resource_id", "").strip():
        p.add("resource_id", "required (the restream resource whose history to read)")
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
        _unknown(p, body, ("host", "all"), "")
        return p.items
    _unknown(p, body, DVR_RANGE_FIELDS, "")
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
    if value in ("", ".", "..") or _has_control(value):
        return [FieldError(field, "not a valid identifier")]
    return []


def _has_control(text: str) -> bool:
    return any(ord(c) < 32 or ord(c) == 127 for c in text)


# --- talking head ---------------------------------------------------------------------------
def check_generate(body: Any, cfg: ThConfigurations | None = None) -> list[FieldError]:
    """A generation body: required fields, no unknown parameters, the spec's limits and, when
    the configurations are known, voice, actor, shot, emotion and background that exist."""
    p = Problems()
    if not isinstance(body, dict):
        p.add("body", "expected a JSON object (the generation request)")
        return p.items
    _unknown(p, body, GENERATE_FIELDS, "")
    script = body.get("script")
    if script is None:
        p.add("script", "required: the text (or SSML) to voice")
    elif not isinstance(script, str) or not script.strip():
        p.add("script", "expected a non-empty string")
    elif len(script) > SCRIPT_MAX:
        p.add("script", f"at most {SCRIPT_MAX} characters, got {len(script)}")
    voice = body.get("voice")
    if voice is None:
        p.add("voice", "required: a voice key from the configurations")
    elif not isinstance(voice, str) or not voice:
        p.add("voice", "expected a non-empty string")
    for key in ("background", "emotion"):
        if key in body and (not isinstance(body[key], str) or not body[key]):
            p.add(key, "expected a non-empty string")
    _check_video_name(p, body)
    actor = body.get("actor")
    if actor is None:
        p.add("actor", "required: an object with name and shot")
    elif not isinstance(actor, dict):
        p.add("actor", "expected an object with name and shot")
    else:
        _check_actor(p, actor)
    if "composition" in body:
        _check_composition(p, body["composition"])
    if "circle" in body:
        _check_circle(p, body["circle"])
    if cfg is not None:
        _check_known(p, body, cfg)
    return p.items


def _check_video_name(p: Problems, body: Mapping[str, Any]) -> None:
    if "video_name" not in body:
        return
    name = body["video_name"]
    if not isinstance(name, str):
        p.add("video_name", "expected a string")
    elif len(name) > VIDEO_NAME_MAX:
        p.add("video_name", f"at most {VIDEO_NAME_MAX} characters, got {len(name)}")


def _check_actor(p: Problems, actor: Mapping[str, Any]) -> None:
    _unknown(p, actor, ACTOR_FIELDS, "actor")
    for key in ("name", "shot"):
        value = actor.get(key)
        if value is None:
            p.add(f"actor.{key}", "required")
        elif not isinstance(value, str) or not value:
            p.add(f"actor.{key}", "expected a non-empty string")
    version = actor.get("version")
    if version is not None and (
        not isinstance(version, str) or not MODEL_VERSION.fullmatch(version)
    ):
        p.add("actor.version", "expected a version such as 1.0.0, or latest")
    if "style" in actor and (not isinstance(actor["style"], str) or not actor["style"]):
        p.add("actor.style", "expected a non-empty string")
    if "size" in actor and actor["size"] not in ACTOR_SIZES:
        p.add("actor.size", f"expected one of {', '.join(ACTOR_SIZES)}")


def _check_fraction(
    p: Problems, comp: Mapping[str, Any], key: str, low: float, closed: bool
) -> None:
    if key not in comp:
        return
    value = comp[key]
    inside = is_number(value) and (low <= value <= 1 if closed else low < value <= 1)
    if not inside:
        rng = f"[{low:g},1]" if closed else f"({low:g},1]"
        p.add(f"composition.{key}", f"expected a number in {rng}")


def _check_composition(p: Problems, comp: Any) -> None:
    if not isinstance(comp, dict):
        p.add("composition", "expected an object")
        return
    _unknown(p, comp, COMPOSITION_FIELDS, "composition")
    orientation = comp.get("orientation")
    if orientation is None:
        p.add("composition.orientation", "required: horizontal or vertical")
    elif orientation not in ORIENTATIONS:
        p.add("composition.orientation", "expected horizontal or vertical")
    style = comp.get("frame_style", "rectangle")
    if style not in FRAME_STYLES:
        p.add("composition.frame_style", "expected rectangle or circle")
        style = None
    _check_fraction(p, comp, "scale", 0, closed=False)
    _check_fraction(p, comp, "crop", 0, closed=False)
    _check_fraction(p, comp, "shift", -1, closed=True)
    if "location" in comp and comp["location"] not in LOCATIONS:
        p.add("composition.location", f"expected one of {', '.join(LOCATIONS)}")
    for key in ("background_color", "border_color"):
        _check_colour(p, comp, key, "composition")
    if style == "circle":
        if "location" not in comp:
            p.add("composition.location", "required when frame_style is circle")
        for key in RECTANGLE_ONLY:
            if key in comp:
                p.add(f"composition.{key}", "applies to frame_style rectangle only")
    elif style == "rectangle":
        for key in CIRCLE_ONLY:
            if key in comp:
                p.add(f"composition.{key}", "applies to frame_style circle only")


def _check_colour(p: Problems, data: Mapping[str, Any], key: str, prefix: str) -> None:
    if key in data:
        value = data[key]
        if not isinstance(value, str) or not HEX_COLOUR.fullmatch(value):
            p.add(f"{prefix}.{key}", "expected a hex colour such as #FFFFFF")


def _check_circle(p: Problems, circle: Any) -> None:
    if not isinstance(circle, dict):
        p.add("circle", "expected an object with location, border_color, background_color")
        return
    _unknown(p, circle, CIRCLE_FIELDS, "circle")
    if "location" in circle and circle["location"] not in LOCATIONS:
        p.add("circle.location", f"expected one of {', '.join(LOCATIONS)}")
    for key in ("border_color", "background_color"):
        _check_colour(p, circle, key, "circle")


def _known(names: Iterable[str]) -> str:
    shown = sorted(names)
    text = ", ".join(shown[:12]) + (", ..." if len(shown) > 12 else "")
    return text or "none"


def _check_known(p: Problems, body: Mapping[str, Any], cfg: ThConfigurations) -> None:
    voice = body.get("voice")
    if isinstance(voice, str) and voice and voice not in cfg.voices:
        p.add("voice", f"unknown voice; known: {_known(cfg.voices)}")
    elif isinstance(voice, str) and isinstance(cfg.voices.get(voice), dict):
        emotions = cfg.voices[voice].get("emotions")
        emotion = body.get("emotion")
        if isinstance(emotion, str) and isinstance(emotions, list) and emotion not in emotions:
            p.add("emotion", f"not offered by voice {voice}; known: {_known(map(str, emotions))}")
    background = body.get("background")
    if isinstance(background, str) and background and background not in cfg.backgrounds:
        p.add("background", f"unknown background; known: {_known(cfg.backgrounds)}")
    actor = body.get("actor")
    if not isinstance(actor, dict):
        return
    name = actor.get("name")
    if not isinstance(name, str) or not name:
        return
    versions = cfg.models.get(name)
    if versions is None:
        p.add("actor.name", f"unknown speaker; known: {_known(cfg.models)}")
        return
    if not isinstance(versions, dict):
        return
    version = actor.get("version")
    if isinstance(version, str) and version != "latest":
        if version not in versions:
            p.add("actor.version", f"unknown version of {name}; known: {_known(versions)}")
            return
        candidates = [versions[version]]
    else:
        candidates = list(versions.values())
    shots: set[str] = set()
    for model in candidates:
        if isinstance(model, dict) and isinstance(model.get("shots"), dict):
            shots.update(str(s) for s in model["shots"])
    shot = actor.get("shot")
    if shots and isinstance(shot, str) and shot and shot not in shots:
        p.add("actor.shot", f"unknown shot for {name}; known: {_known(shots)}")


def check_rename(body: Any) -> list[FieldError]:
    p = Problems()
    if not isinstance(body, dict):
        p.add("body", 'expected a JSON object such as {"video_name": "..."}')
        return p.items
    _unknown(p, body, ("video_name",), "")
    _check_video_name(p, body)
    return p.items


def check_tasks_query(query: Mapping[str, str]) -> list[FieldError]:
    """The ``/tasks`` filters: minute-precision UTC dates, counts, ``[+-]field`` sort, known
    ``fields``."""
    p = Problems()
    dates: dict[str, str] = {}
    for key in ("start", "end"):
        if key not in query:
            continue
        m = TASK_DATE.fullmatch(query[key])
        if m is None or _bad_date(m.group(1)):
            p.add(key, "expected YYYY-MM-DDThh:mm:00 with Z or +00:00 (UTC)")
        elif m.group(2) != "00":
            p.add(key, "seconds must be 00 (minute precision)")
        elif m.group(3) not in (None, "Z") and m.group(3).replace(":", "")[1:] != "0000":
            p.add(key, "must be UTC (Z or +00:00)")
        else:
            dates[key] = m.group(1)
    if len(dates) == 2 and dates["start"] >= dates["end"]:
        p.add("end", "must be later than start (end is exclusive)")
    for key, low in (("offset", 0), ("limit", 1)):
        if key in query:
            value = query[key]
            if not value.isascii() or not value.isdigit() or int(value) < low:
                p.add(key, f"expected a whole number, {low} or more")
    if "sort" in query:
        sort = query["sort"]
        field = sort[1:] if sort[:1] in ("+", "-", " ") else sort  # "+" decodes to " "
        if field not in VIDEO_BASE_FIELDS + VIDEO_EXTRA_FIELDS:
            p.add("sort", "expected [+-]field with a field of the video record, such as -duration")
    if "fields" in query:
        names = [f.strip() for f in query["fields"].split(",")]
        bad = [n for n in names if n not in VIDEO_BASE_FIELDS + VIDEO_EXTRA_FIELDS]
        if bad:
            p.add(
                "fields",
                f"unknown field(s) {', '.join(bad)}; known: {', '.join(VIDEO_EXTRA_FIELDS)}",
            )
    if "id" in query and not query["id"].strip():
        p.add("id", "must not be empty when given")
    return p.items


def _bad_date(text: str) -> bool:
    try:
        datetime.strptime(text, "%Y-%m-%dT%H:%M")
    except ValueError:
        return True
    return False


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
