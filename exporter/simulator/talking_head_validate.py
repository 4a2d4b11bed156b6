"""Checks a talking-head generation body: 422 for unknown parameter names, 400 for the rest."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from exporter.simulator.talking_head_catalog import (
    BACKGROUNDS,
    MODELS,
    SIZES,
    VOICES,
    resolution,
    versions_newest_first,
)

TOP = {"script", "actor", "voice", "background", "emotion", "video_name", "composition", "circle"}
ACTOR = {"name", "version", "style", "shot", "size"}
COMPOSITION = {
    "orientation",
    "frame_style",
    "scale",
    "crop",
    "shift",
    "location",
    "background_color",
    "border_color",
}
CIRCLE = {"location", "border_color", "background_color"}
LOCATIONS = ("upperleft", "upperright", "lowerleft", "lowerright")
MAX_SCRIPT = 3000
MAX_NAME = 35
MAX_SECONDS = 180
CHARS_PER_SECOND = 15
_HEX = re.compile(r"#(?:[0-9A-Fa-f]{3}|[0-9A-Fa-f]{6})")  # #FFF or #FFFFFF (fullmatch)
_TAG = re.compile(r"<[^>]*>")


class UnknownParameters(ValueError):
    """422: parameter names the API does not know."""


class BadRequest(ValueError):
    """400: a missing, mistyped or inconsistent value."""


@dataclass(frozen=True)
class Generation:
    """A valid generation request, with the model version and defaults resolved."""

    script: str
    voice: str
    actor: str
    version: str
    style: str
    shot: str
    size: str
    background: str
    emotion: str
    video_name: str
    orientation: str
    frame_style: str
    scale: float
    crop: float
    shift: float
    circle: dict[str, Any] | None
    duration: float

    @property
    def resolution(self) -> str:
        return resolution(self.size, self.orientation)


def _unknown(body: dict[str, Any]) -> list[str]:
    names = sorted(set(body) - TOP)
    for key, allowed in (("actor", ACTOR), ("composition", COMPOSITION), ("circle", CIRCLE)):
        inner = body.get(key)
        if isinstance(inner, dict):
            names += [f"{key}.{n}" for n in sorted(set(inner) - allowed)]
    return names


def _str(obj: dict[str, Any], key: str, where: str = "", required: bool = False) -> str | None:
    if key not in obj or obj[key] is None:
        if required:
            raise BadRequest(f"Field '{where}{key}' is required")
        return None
    if not isinstance(obj[key], str):
        raise BadRequest(f"Field '{where}{key}' must be a string")
    return str(obj[key])


def _num(
    obj: dict[str, Any], key: str, lo: float, hi: float, lo_open: bool, default: float
) -> float:
    if key not in obj:
        return default
    v = obj[key]
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise BadRequest(f"Field 'composition.{key}' must be a number")
    if v > hi or v < lo or (lo_open and v == lo):
        left = "(" if lo_open else "["
        raise BadRequest(f"Field 'composition.{key}' must be in {left}{lo:g},{hi:g}]")
    return float(v)


def _circle_params(obj: dict[str, Any], where: str) -> dict[str, str]:
    location = _str(obj, "location", where) or "upperleft"
    if location not in LOCATIONS:
        raise BadRequest(f"Field '{where}location' must be one of {', '.join(LOCATIONS)}")
    out = {"location": location}
    for key, default in (("border_color", "#000000"), ("background_color", "#FFFFFF")):
        value = _str(obj, key, where) or default
        if not _HEX.fullmatch(value):
            raise BadRequest(f"Field '{where}{key}' must be a hex colour like #FFFFFF")
        out[key] = value
    return out


def _model_problem(actor: str, version: str, a: dict[str, Any], voice: str, bg: str) -> str | None:
    """What (if anything) makes this model version unusable with the requested parameters."""
    model = MODELS[actor][version]
    if a.get("style") is not None and a["style"] != model["style"]:
        return "style"
    shot = model["shots"].get(a["shot"])
    if shot is None:
        return "shot"
    if voice not in model["voices"]:
        return "voice"
    if a.get("size") is not None and a["size"] != shot["size"]:
        return "size"
    if shot["size"] not in BACKGROUNDS[bg]["sizes"]:
        return "background"
    return None


def validate_generation(body: Any) -> Generation:
    if not isinstance(body, dict):
        raise BadRequest("Request body must be a JSON object")
    unknown = _unknown(body)
    if unknown:
        raise UnknownParameters(f"Incorrect parameter names: {', '.join(unknown)}")
    script = _str(body, "script", required=True) or ""
    if not script.strip():
        raise BadRequest("Field 'script' must not be empty")
    if len(script) > MAX_SCRIPT:
        raise BadRequest(f"Field 'script' must be at most {MAX_SCRIPT} characters")
    duration = round(max(1.0, len(_TAG.sub("", script)) / CHARS_PER_SECOND), 1)
    if duration > MAX_SECONDS:
        raise BadRequest("Video would be longer than 3 minutes; shorten the script")
    actor_obj = body.get("actor")
    if actor_obj is None:
        raise BadRequest("Field 'actor' is required")
    if not isinstance(actor_obj, dict):
        raise BadRequest("Field 'actor' must be an object")
    name = _str(actor_obj, "name", "actor.", required=True) or ""
    _str(actor_obj, "shot", "actor.", required=True)
    for key in ("version", "style", "size"):
        _str(actor_obj, key, "actor.")
    voice = _str(body, "voice", required=True) or ""
    if voice not in VOICES:
        raise BadRequest(f"Unknown voice '{voice}'")
    if name not in MODELS:
        raise BadRequest(f"Unknown actor '{name}'")
    size = actor_obj.get("size")
    if size is not None and size not in SIZES:
        raise BadRequest(f"Field 'actor.size' must be one of {', '.join(SIZES)}")
    background = _str(body, "background") or "green_screen"
    if background not in BACKGROUNDS:
        raise BadRequest(f"Unknown background '{background}'")
    wanted = actor_obj.get("version") or "latest"
    if wanted != "latest" and wanted not in MODELS[name]:
        raise BadRequest(f"bad version for {name}-{wanted}")
    candidates = versions_newest_first(name) if wanted == "latest" else [wanted]
    problems = [(v, _model_problem(name, v, actor_obj, voice, background)) for v in candidates]
    chosen = next((v for v, p in problems if p is None), None)
    if chosen is None:
        version, problem = problems[0]
        raise BadRequest(f"bad {problem} for {name}-{version}")
    model = MODELS[name][chosen]
    emotion = _str(body, "emotion") or "neutral"
    if emotion not in VOICES[voice].get("emotions", ["neutral"]):
        raise BadRequest(f"bad emotion for voice {voice}: {emotion}")
    video_name = _str(body, "video_name") or ""
    if len(video_name) > MAX_NAME:
        raise BadRequest(f"Field 'video_name' must be at most {MAX_NAME} characters")
    comp = body.get("composition") or {}
    if not isinstance(comp, dict):
        raise BadRequest("Field 'composition' must be an object")
    orientation = "horizontal"
    frame_style = "rectangle"
    circle: dict[str, Any] | None = None
    if comp:
        orientation = _str(comp, "orientation", "composition.", required=True) or ""
        if orientation not in ("horizontal", "vertical"):
            raise BadRequest("Field 'composition.orientation' must be horizontal or vertical")
        frame_style = _str(comp, "frame_style", "composition.") or "rectangle"
        if frame_style not in ("rectangle", "circle"):
            raise BadRequest("Field 'composition.frame_style' must be rectangle or circle")
        only = ("scale", "crop", "shift") if frame_style == "circle" else sorted(CIRCLE)
        for key in only:
            if key in comp:
                raise BadRequest(f"Field 'composition.{key}' does not apply to {frame_style}")
        if frame_style == "circle":
            circle = _circle_params(comp, "composition.")
    scale = _num(comp, "scale", 0.0, 1.0, True, 1.0)
    crop = _num(comp, "crop", 0.0, 1.0, True, 1.0)
    shift = _num(comp, "shift", -1.0, 1.0, False, 0.0)
    circle_obj = body.get("circle")
    if circle_obj is not None:
        if not isinstance(circle_obj, dict):
            raise BadRequest("Field 'circle' must be an object")
        circle = _circle_params(circle_obj, "circle.")
    return Generation(
        script=script,
        voice=voice,
        actor=name,
        version=chosen,
        style=model["style"],
        shot=actor_obj["shot"],
        size=model["shots"][actor_obj["shot"]]["size"],
        background=background,
        emotion=emotion,
        video_name=video_name,
        orientation=orientation,
        frame_style="circle" if circle else frame_style,
        scale=scale,
        crop=crop,
        shift=shift,
        circle=circle,
        duration=duration,
    )
