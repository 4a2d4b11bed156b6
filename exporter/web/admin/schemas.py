"""JSON Schemas of admin requests, written from the validation modules' rules (never by hand)."""

from __future__ import annotations

import re
from typing import Any

from exporter.support.logs import MASK
from exporter.talking_head import reply
from exporter.web.admin import validation as v
from exporter.web.admin import validation_th as th

REF = "#/components/schemas/"
_JSON_TYPES: dict[type, str] = {
    str: "string",
    int: "integer",
    bool: "boolean",
    list: "array",
    dict: "object",
}


def ref(name: str) -> dict[str, str]:
    return {"$ref": REF + name}


def full(rx: re.Pattern[str]) -> str:
    """The pattern of a regex the checks apply with ``fullmatch``.

    It ends with ``validation.END``, not ``$``: Python's ``$`` also matches before a final
    newline, so fuzzers and validators in Python would take ``"x\\n"`` where the checks refuse it.
    """
    return f"^(?:{rx.pattern}){v.END}"


def typed(types: tuple[type, ...]) -> dict[str, Any]:
    names = [_JSON_TYPES[t] for t in types]
    return {"type": names[0] if len(names) == 1 else names}


def closed(
    properties: dict[str, Any], required: tuple[str, ...] = (), **extra: Any
) -> dict[str, Any]:
    """An object with exactly these properties: the admin API refuses unknown fields."""
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    schema["additionalProperties"] = False
    return {**schema, **extra}


NON_BLANK_STRING: dict[str, Any] = {
    "type": "string",
    "pattern": v.NON_BLANK.pattern,
    "description": "Not empty, not only white space.",
}
NON_EMPTY_STRING: dict[str, Any] = {"type": "string", "minLength": 1}
ISO_Z_STRING: dict[str, Any] = {
    "type": "string",
    "pattern": full(v.ISO_Z),
    "description": "A real UTC time YYYY-MM-DDThh:mm:ssZ.",
    "examples": ["2026-01-01T00:00:00Z"],
}
SEGMENT_STRING: dict[str, Any] = {
    "type": "string",
    "pattern": full(v.SEGMENT),
    "description": "An id the platform hands out: 1-64 letters, digits, - or _.",
}
STREAM_NAME_STRING: dict[str, Any] = {
    "type": "string",
    "pattern": full(v.STREAM_NAME),
    "description": "May contain /, literal or percent-encoded; no empty, . or .. part.",
    "examples": ["live/main"],
}
TASKS_QUERY_SCHEMAS: dict[str, dict[str, Any]] = {
    "start": {
        "type": "string",
        "pattern": full(th.TASK_DATE),
        "description": "A real UTC minute YYYY-MM-DDThh:mm:00, Z, +00:00 or no zone.",
        "examples": ["2026-01-01T00:00:00Z"],
    },
    "end": {"type": "string", "pattern": full(th.TASK_DATE), "examples": ["2026-01-02T00:00:00Z"]},
    **{
        name: {"type": "integer", "minimum": low, "maximum": th.COUNT_MAXIMUM}
        for name, low in th.COUNT_MINIMUM.items()
    },
    "sort": {"enum": list(th.SORT_VALUES)},
    "fields": {"type": "string", "pattern": full(th.FIELDS_LIST)},
    "id": NON_BLANK_STRING,
}


def _restream_entry() -> dict[str, Any]:
    props = {key: typed(types) for key, types in v.ENTRY_TYPES.items()}
    props["schedule"]["items"] = ref("ScheduleWindow")
    props["backup"] = ref("RestreamBackup")
    for key in v.ENTRY_REQUIRED:
        props[key] = NON_BLANK_STRING
    for key in ("target_key", "password"):
        props[key] = {
            **props[key],
            "description": f"Send the mask as read ({MASK}#<fingerprint>) to keep the stored "
            "value.",
        }
    return closed(props, v.ENTRY_REQUIRED)


def _dvr_delete() -> dict[str, Any]:
    ints = {k: {"type": "integer", "minimum": low} for k, low in v.DVR_MINIMUM.items()}
    host = {**NON_BLANK_STRING, "description": "A node identifier, or * for every node."}
    one_end = [{"required": ["duration_sec"]}, {"required": ["to_ts"]}]
    return {
        "oneOf": [
            closed(
                {"host": host, **ints}, ("host", "from_ts"), title="DvrDeleteRange", oneOf=one_end
            ),
            closed({"host": host, "all": {"const": True}}, v.DVR_ALL_FIELDS, title="DvrDeleteAll"),
        ]
    }


def _colour() -> dict[str, Any]:
    return {"type": "string", "pattern": full(th.HEX_COLOUR), "examples": ["#FFFFFF"]}


def _composition() -> dict[str, Any]:
    """Two shapes: a rectangle frame (the default frame_style), or a circle (location required)."""
    rectangle, circle = reply.FRAME_STYLES
    fractions = {
        key: {
            "type": "number",
            "minimum" if low_included else "exclusiveMinimum": low,
            "maximum": 1,
        }
        for key, (low, low_included) in th.FRACTIONS.items()
    }
    assert set(fractions) == set(reply.RECTANGLE_ONLY)
    circle_props = {"location": {"enum": list(reply.LOCATIONS)}}
    circle_props |= {key: _colour() for key in reply.CIRCLE_ONLY if key != "location"}
    orientation = {"enum": list(reply.ORIENTATIONS)}
    return {
        "oneOf": [
            closed(
                {"orientation": orientation, "frame_style": {"const": rectangle}, **fractions},
                ("orientation",),
                title="CompositionRectangle",
            ),
            closed(
                {"orientation": orientation, "frame_style": {"const": circle}, **circle_props},
                ("orientation", "frame_style", "location"),
                title="CompositionCircle",
            ),
        ]
    }


def _generate() -> dict[str, Any]:
    props: dict[str, Any] = {
        "script": {**NON_BLANK_STRING, "maxLength": reply.SCRIPT_MAX},
        "actor": ref("Actor"),
        "voice": NON_EMPTY_STRING,
        "background": NON_EMPTY_STRING,
        "emotion": NON_EMPTY_STRING,
        "video_name": {"type": "string", "maxLength": reply.VIDEO_NAME_MAX},
        "composition": ref("Composition"),
        "circle": ref("Circle"),
    }
    assert tuple(props) == reply.GENERATE_FIELDS
    example = {
        "script": "Good morning!",
        "actor": {"name": "Natalia", "version": "1.0.0", "shot": "waist"},
        "voice": "Alena",
        "emotion": "good",
        "background": "office",
        "video_name": "morning news",
        "composition": {"orientation": "horizontal"},
    }
    return closed(props, reply.GENERATE_REQUIRED, examples=[example])


def _actor() -> dict[str, Any]:
    props: dict[str, Any] = {
        "name": NON_EMPTY_STRING,
        "version": {"type": "string", "pattern": full(th.MODEL_VERSION)},
        "style": NON_EMPTY_STRING,
        "shot": NON_EMPTY_STRING,
        "size": {"enum": list(reply.ACTOR_SIZES)},
    }
    assert tuple(props) == reply.ACTOR_FIELDS
    return closed(props, reply.ACTOR_REQUIRED)


def request_schemas() -> dict[str, dict[str, Any]]:
    """The component schemas of request bodies."""
    resource = {key: typed(types) for key, types in v.RESOURCE_TYPES.items()}
    resource["restreams"]["items"] = ref("RestreamEntry")
    for key in v.READ_ONLY_FIELDS:
        resource[key]["readOnly"] = True
    read_only = ", ".join(v.READ_ONLY_FIELDS)
    resource["name"] = NON_EMPTY_STRING
    return {
        "RestreamResource": closed(
            resource,
            v.RESOURCE_REQUIRED,
            description=f"A create or update body. {read_only} are assigned by the platform: "
            "accepted (a resource read back can be sent again as it is) but never sent on.",
            examples=[
                {
                    "name": "to partner",
                    "type": "short",
                    "active": True,
                    "restreams": [
                        {"source": "live/main", "target_url": "rtmp://partner.example/app"}
                    ],
                }
            ],
        ),
        "RestreamEntry": _restream_entry(),
        "RestreamBackup": {
            "oneOf": [
                closed({}, title="NoBackup"),
                closed(
                    {key: {"type": "string"} for key in v.BACKUP_FIELDS},
                    v.BACKUP_REQUIRED,
                    title="BackupTarget",
                ),
            ]
        },
        "ScheduleWindow": closed(
            {key: ISO_Z_STRING for key in v.WINDOW_FIELDS},
            v.WINDOW_FIELDS,
            description=v.SCHEDULE_ORDER.capitalize() + ".",
        ),
        "DvrDelete": _dvr_delete(),
        "Actor": _actor(),
        "Composition": _composition(),
        "Circle": closed(
            {"location": {"enum": list(reply.LOCATIONS)}}
            | {key: _colour() for key in reply.CIRCLE_FIELDS if key != "location"}
        ),
        "GenerateRequest": _generate(),
        "RenameRequest": closed(
            {"video_name": {"type": "string", "maxLength": reply.VIDEO_NAME_MAX}},
            examples=[{"video_name": "morning news"}],
        ),
    }
