"""The OpenAPI 3.1 document of ``/api/v1``, built from the same route table the app registers."""

from __future__ import annotations

from typing import Any

from exporter import __version__
from exporter.web.admin.core import GENERATE_PER_MINUTE, Route
from exporter.web.admin.validation import path_param_schema
from exporter.web.admin.validation_th import (
    ACTOR_SIZES,
    FRAME_STYLES,
    LOCATIONS,
    ORIENTATIONS,
    SCRIPT_MAX,
    VIDEO_NAME_MAX,
)

_REF = "#/components/schemas/"
_ISO_Z = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$"
_HEX = "^#(?:[0-9A-Fa-f]{3}|[0-9A-Fa-f]{6})$"


def _ref(name: str) -> dict[str, str]:
    return {"$ref": _REF + name}


_STR = {"type": "string"}
_INT = {"type": "integer"}

SCHEMAS: dict[str, dict[str, Any]] = {
    "Error": {
        "type": "object",
        "description": "An error of the exporter itself (not the platform's).",
        "required": ["error", "message"],
        "properties": {
            "error": {
                "type": "string",
                "enum": [
                    "invalid_request",
                    "unauthorized",
                    "forbidden",
                    "unknown_account",
                    "admin_disabled",
                    "rate_limited",
                    "upstream_unreachable",
                    "upstream_auth",
                    "upstream_invalid_reply",
                    "upstream_error_body",
                    "upstream_timeout",
                    "internal_error",
                ],
            },
            "message": _STR,
            "fields": {"type": "array", "items": _ref("FieldError")},
        },
        "additionalProperties": False,
    },
    "FieldError": {
        "type": "object",
        "required": ["field", "message"],
        "properties": {
            "field": {"type": "string", "description": "Dotted path, e.g. restreams[0].password"},
            "message": _STR,
        },
        "additionalProperties": False,
    },
    "UpstreamReply": {
        "description": "The platform's reply as received (status and body), secrets masked.",
    },
    "ScheduleWindow": {
        "type": "object",
        "required": ["start", "stop"],
        "properties": {
            "start": {"type": "string", "pattern": _ISO_Z},
            "stop": {"type": "string", "pattern": _ISO_Z, "description": "Later than start."},
        },
        "additionalProperties": False,
    },
    "RestreamBackup": {
        "type": "object",
        "properties": {"target_url": _STR, "login": _STR, "password": _STR},
        "additionalProperties": False,
    },
    "RestreamEntry": {
        "type": "object",
        "required": ["source", "target_url"],
        "properties": {
            "schedule": {"type": "array", "items": _ref("ScheduleWindow")},
            "source": {"type": "string", "minLength": 1},
            "transcoded": {"type": "boolean"},
            "transcode_quality": _STR,
            "target_type": _STR,
            "target_url": {"type": "string", "minLength": 1},
            "target_key": {
                "type": "string",
                "description": "Send ******** to keep the stored key.",
            },
            "login": _STR,
            "password": {"type": "string", "description": "Send ******** to keep the stored one."},
            "backup": _ref("RestreamBackup"),
        },
    },
    "RestreamResource": {
        "type": "object",
        "properties": {
            "name": _STR,
            "type": {"type": "string", "description": "short, or other values the platform has."},
            "active": {"type": "boolean"},
            "restreams": {"type": "array", "items": _ref("RestreamEntry")},
            "resource_id": {"type": ["string", "integer"]},
            "creation_ts": _INT,
            "modification_ts": _INT,
        },
    },
    "DvrDelete": {
        "oneOf": [
            {
                "type": "object",
                "title": "range",
                "required": ["host", "from_ts"],
                "properties": {
                    "host": {"type": "string", "minLength": 1, "description": "Node, or *."},
                    "from_ts": {"type": "integer", "minimum": 0},
                    "duration_sec": {"type": "integer", "minimum": 1},
                    "to_ts": {"type": "integer", "minimum": 0},
                },
                "oneOf": [{"required": ["duration_sec"]}, {"required": ["to_ts"]}],
                "additionalProperties": False,
            },
            {
                "type": "object",
                "title": "all",
                "required": ["host", "all"],
                "properties": {
                    "host": {"type": "string", "minLength": 1},
                    "all": {"const": True},
                },
                "additionalProperties": False,
            },
        ]
    },
    "Actor": {
        "type": "object",
        "required": ["name", "shot"],
        "properties": {
            "name": {"type": "string", "minLength": 1},
            "version": {"type": "string", "pattern": r"^(\d+\.\d+\.\d+|latest)$"},
            "style": {"type": "string", "minLength": 1},
            "shot": {"type": "string", "minLength": 1},
            "size": {"enum": list(ACTOR_SIZES)},
        },
        "additionalProperties": False,
    },
    "Composition": {
        "type": "object",
        "required": ["orientation"],
        "description": "scale, crop, shift apply to frame_style rectangle; location and the "
        "colours to circle (location then required).",
        "properties": {
            "orientation": {"enum": list(ORIENTATIONS)},
            "frame_style": {"enum": list(FRAME_STYLES)},
            "scale": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
            "crop": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
            "shift": {"type": "number", "minimum": -1, "maximum": 1},
            "location": {"enum": list(LOCATIONS)},
            "background_color": {"type": "string", "pattern": _HEX},
            "border_color": {"type": "string", "pattern": _HEX},
        },
        "additionalProperties": False,
    },
    "Circle": {
        "type": "object",
        "properties": {
            "location": {"enum": list(LOCATIONS)},
            "background_color": {"type": "string", "pattern": _HEX},
            "border_color": {"type": "string", "pattern": _HEX},
        },
        "additionalProperties": False,
    },
    "GenerateRequest": {
        "type": "object",
        "required": ["script", "actor", "voice"],
        "description": "voice, actor (name, version, shot), emotion and background must exist in "
        "the account's configurations when the exporter has them cached.",
        "properties": {
            "script": {"type": "string", "minLength": 1, "maxLength": SCRIPT_MAX},
            "actor": _ref("Actor"),
            "voice": {"type": "string", "minLength": 1},
            "background": {"type": "string", "minLength": 1},
            "emotion": {"type": "string", "minLength": 1},
            "video_name": {"type": "string", "maxLength": VIDEO_NAME_MAX},
            "composition": _ref("Composition"),
            "circle": _ref("Circle"),
        },
        "additionalProperties": False,
    },
    "RenameRequest": {
        "type": "object",
        "properties": {"video_name": {"type": "string", "maxLength": VIDEO_NAME_MAX}},
        "additionalProperties": False,
    },
}

# Statuses the exporter answers itself, per kind of route.
OWN_STATUSES = {
    400: "Malformed request body (not JSON, or not an object).",
    401: "No or unknown bearer token.",
    403: "A read token on an operation that changes data.",
    404: "Account not served by this exporter (or admin disabled).",
    422: "A field breaks a rule; `fields` names each one. Nothing was sent upstream.",
    429: f"More than {GENERATE_PER_MINUTE} generate requests a minute for this account; "
    "see Retry-After. Nothing was sent upstream.",
    502: "The platform could not be reached.",
    504: "The platform did not answer in time.",
}


def own_statuses(route: Route) -> list[int]:
    codes = [401, 404, 422, 502, 504]
    if route.write:
        codes.append(403)
    if route.body is not None:
        codes.append(400)
    if route.limited:
        codes.append(429)
    return sorted(codes)


def _error_response(code: int) -> dict[str, Any]:
    return {
        "description": OWN_STATUSES[code],
        "content": {"application/json": {"schema": _ref("Error")}},
    }


def _operation(route: Route) -> dict[str, Any]:
    params: list[dict[str, Any]] = [
        {
            "name": name,
            "in": "path",
            "required": True,
            "schema": path_param_schema(name),
            **(
                {"description": "May contain /; percent-encoded or literal."}
                if name == "stream_name"
                else {}
            ),
        }
        for name in route.path_params
    ]
    params += [
        {
            "name": q.name,
            "in": "query",
            "required": q.required,
            "description": q.description,
            "schema": q.schema,
        }
        for q in route.query
    ]
    responses: dict[str, Any] = {
        str(route.success): {
            "description": "The platform's answer, passed through with its status (secrets "
            "masked). Header X-Upstream-Status carries the platform's status.",
            "content": {"application/json": {"schema": _ref("UpstreamReply")}},
        },
    }
    for code in own_statuses(route):
        responses[str(code)] = _error_response(code)
    responses["default"] = {
        "description": "Any other status is the platform's own answer, passed through "
        "(X-Upstream-Status is set).",
        "content": {"application/json": {"schema": _ref("UpstreamReply")}},
    }
    op: dict[str, Any] = {
        "operationId": route.operation_id,
        "summary": route.summary,
        "description": f"Upstream: `{route.upstream}`. Needs the "
        f"{'write' if route.write else 'read or write'} token.",
        "tags": [route.tag],
        "parameters": params,
        "responses": responses,
        "security": [{"bearer": ["write"]}] if route.write else [{"bearer": []}],
    }
    if route.body is not None:
        op["requestBody"] = {
            "required": route.body_required,
            "content": {"application/json": {"schema": _ref(route.body)}},
        }
    return op


def build_openapi(routes: tuple[Route, ...]) -> dict[str, Any]:
    paths: dict[str, dict[str, Any]] = {}
    for route in routes:
        paths.setdefault(route.openapi_path, {})[route.method.lower()] = _operation(route)
    paths["/openapi.json"] = {
        "get": {
            "operationId": "openapi",
            "summary": "This document (no authentication).",
            "tags": ["meta"],
            "security": [],
            "responses": {"200": {"description": "The OpenAPI document."}},
        }
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "cdnvideo-exporter admin API",
            "version": __version__,
            "description": "Authenticated pass-through to the streaming platform's restream, "
            "network DVR and talking-head operations. Every request is checked against the "
            "platform's rules before anything goes upstream; changes are audit-logged.",
        },
        "servers": [{"url": "/api/v1"}],
        "paths": paths,
        "components": {
            "schemas": SCHEMAS,
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "admin.read_token for reads; admin.write_token for everything.",
                }
            },
        },
    }
