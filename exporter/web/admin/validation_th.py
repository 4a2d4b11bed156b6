"""Talking-head rules of the spec: generation body, rename, and the ``/tasks`` filters."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from exporter.talking_head.reply import (
    ACTOR_FIELDS,
    ACTOR_REQUIRED,
    ACTOR_SIZES,
    CIRCLE_FIELDS,
    CIRCLE_ONLY,
    COMPOSITION_FIELDS,
    FRAME_STYLES,
    GENERATE_FIELDS,
    LOCATIONS,
    ORIENTATIONS,
    RECTANGLE_ONLY,
    SCRIPT_MAX,
    VIDEO_EXTRA_FIELDS,
    VIDEO_FIELDS,
    VIDEO_NAME_MAX,
    ThConfigurations,
)
from exporter.web.admin.validation import (
    DAY,
    MINUTE,
    SPACE,
    FieldError,
    Problems,
    is_blank,
    is_number,
    unknown_fields,
)

# /tasks dates: a real day and minute, seconds 00, UTC (Z, +00:00, +0000 or no zone).
TASK_DATE = re.compile(DAY + "T" + MINUTE + r":00(?:Z|[+-]00:?00)?")
HEX_COLOUR = re.compile(r"#(?:[0-9A-Fa-f]{3}|[0-9A-Fa-f]{6})")
MODEL_VERSION = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+|latest")
COUNT = re.compile(r"[0-9]+")  # /tasks offset and limit: ASCII digits ...
COUNT_MINIMUM = {"offset": 0, "limit": 1}  # ... with these lowest values
COUNT_MAXIMUM = 2**31 - 1  # ... and this highest (a 32-bit integer, as the platform reads it)
FRACTIONS = {"scale": (0, False), "crop": (0, False), "shift": (-1, True)}  # (low, low included)

# Fields the platform sorts by: every field of the video record but the nested ``circle``.
SORT_FIELDS = tuple(name for name in VIDEO_FIELDS if name != "circle")
SORT_VALUES = tuple(sign + name for sign in ("", "+", "-") for name in SORT_FIELDS)
_FIELD_NAME = f"[{SPACE}]*(?:{'|'.join(VIDEO_EXTRA_FIELDS)})[{SPACE}]*"
FIELDS_LIST = re.compile(f"{_FIELD_NAME}(?:,{_FIELD_NAME})*")  # fields=video_name, script
TASKS_ORDER = "end is later than start"
KNOWN_CONFIGURATION = (
    "voice, emotion (one the voice offers), background and the actor's name, version and shot "
    "exist in the account's configurations (checked when the exporter has them cached)"
)
# Rules of the platform's state (x-rules of their operations): the platform answers 400.
NOT_CANCELED = "the task is not canceled already (the platform answers 400 naming its status)"
VIDEO_READY = "the video is ready: its task is processed (the platform answers 400 until then)"


# --- talking head ---------------------------------------------------------------------------
def check_generate(body: Any, cfg: ThConfigurations | None = None) -> list[FieldError]:
    """A generation body: required fields, no unknown parameters, the spec's limits and, when
    the configurations are known, voice, actor, shot, emotion and background that exist."""
    p = Problems()
    if not isinstance(body, dict):
        p.add("body", "expected a JSON object (the generation request)")
        return p.items
    unknown_fields(p, body, GENERATE_FIELDS, "")
    script = body.get("script")
    if script is None:
        p.add("script", "required: the text (or SSML) to voice")
    elif not isinstance(script, str) or is_blank(script):
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
    unknown_fields(p, actor, ACTOR_FIELDS, "actor")
    for key in ACTOR_REQUIRED:
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
    unknown_fields(p, comp, COMPOSITION_FIELDS, "composition")
    orientation = comp.get("orientation")
    if orientation is None:
        p.add("composition.orientation", "required: horizontal or vertical")
    elif orientation not in ORIENTATIONS:
        p.add("composition.orientation", "expected horizontal or vertical")
    style = comp.get("frame_style", "rectangle")
    if style not in FRAME_STYLES:
        p.add("composition.frame_style", "expected rectangle or circle")
        style = None
    for key, (low, closed) in FRACTIONS.items():
        _check_fraction(p, comp, key, low, closed)
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
    unknown_fields(p, circle, CIRCLE_FIELDS, "circle")
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
    unknown_fields(p, body, ("video_name",), "")
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
        if TASK_DATE.fullmatch(query[key]) is None:
            p.add(key, "expected a real date YYYY-MM-DDThh:mm:00, UTC (Z, +00:00 or no zone)")
        else:
            dates[key] = query[key][:16]
    if len(dates) == 2 and dates["start"] >= dates["end"]:
        p.add("end", "must be later than start (end is exclusive)")
    for key, low in COUNT_MINIMUM.items():
        if key in query:
            value = query[key]
            # The length first: int() of thousands of digits raises instead of answering.
            if (
                len(value) > len(str(COUNT_MAXIMUM))
                or not COUNT.fullmatch(value)
                or not low <= int(value) <= COUNT_MAXIMUM
            ):
                p.add(key, f"expected a whole number, {low} to {COUNT_MAXIMUM}")
    if "sort" in query:
        sort = query["sort"]
        if sort[:1] == " ":  # a literal "+" in a query string decodes to " "
            sort = "+" + sort[1:]
        if sort not in SORT_VALUES:
            p.add("sort", "expected [+-]field with a field of the video record, such as -duration")
    if "fields" in query and not FIELDS_LIST.fullmatch(query["fields"]):
        names = [f.strip() for f in query["fields"].split(",")]
        bad = [n for n in names if n not in VIDEO_EXTRA_FIELDS] or [query["fields"]]
        p.add(
            "fields",
            f"unknown field(s) {', '.join(bad)}; known: {', '.join(VIDEO_EXTRA_FIELDS)}",
        )
    if "id" in query and is_blank(query["id"]):
        p.add("id", "must not be empty when given")
    return p.items
