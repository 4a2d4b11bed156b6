"""The OpenAPI 3.1 document of ``/api/v1``, built from the route table and the validation rules."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from exporter import __version__
from exporter.web.admin.core import GENERATE_PER_MINUTE, Route
from exporter.web.admin.schemas import (
    SEGMENT_STRING,
    STREAM_NAME_STRING,
    closed,
    ref,
    request_schemas,
)

UPSTREAM_HEADER = "X-Upstream-Status"

# What the platform's restream answers carry, errors and successes alike.
_RESTREAM_REPLY = {
    "success": {"type": "boolean"},
    "code": {"type": "integer"},
    "message": {"type": "string"},
}

# The platform's own error bodies, one shape per area (passed through as received).
AREA_ERRORS: dict[str, tuple[str, dict[str, Any]]] = {
    "restream": (
        "RestreamPlatformError",
        {
            "type": "object",
            "description": "The platform's restream error body, passed through.",
            "properties": _RESTREAM_REPLY,
        },
    ),
    "dvr": (
        "DvrPlatformError",
        {
            "type": "object",
            "description": "The platform's network DVR error body, passed through; a partly "
            "failed deletion (500) names the nodes in failed_hosts.",
            "properties": {
                "status": {"type": "string"},
                "description": {"type": "string"},
                "failed_hosts": {"type": "array", "items": {"type": "string"}},
            },
        },
    ),
    "talking-head": (
        "TalkingHeadPlatformError",
        {
            "type": "object",
            "description": "The platform's talking-head error body, passed through.",
            "properties": {"status": {"type": "string"}, "message": {"type": "string"}},
        },
    ),
}

RESPONSE_SCHEMAS: dict[str, dict[str, Any]] = {
    "Error": closed(
        {
            "error": {
                "type": "string",
                "description": "What went wrong, e.g. invalid_request, unauthorized, forbidden, "
                "unknown_account, admin_disabled, rate_limited, upstream_unreachable, "
                "upstream_auth, upstream_invalid_reply, upstream_error_body, upstream_timeout, "
                "internal_error.",
            },
            "message": {"type": "string"},
            "fields": {"type": "array", "items": ref("FieldError")},
        },
        ("error", "message"),
        description="An answer of the exporter itself: no X-Upstream-Status header.",
    ),
    "FieldError": closed(
        {
            "field": {"type": "string", "description": "Dotted path, e.g. restreams[0].password"},
            "message": {"type": "string"},
        },
        ("field", "message"),
    ),
    "UpstreamReply": {
        "description": "The platform's reply as received, secrets masked.",
    },
    "RestreamCreated": {
        "type": "object",
        "description": "The platform's answer to a create; resource_id names the new resource.",
        "properties": {**_RESTREAM_REPLY, "resource_id": {"type": ["string", "integer"]}},
    },
    "TaskAccepted": {
        "type": "object",
        "description": "The platform's answer to a generate; id names the task.",
        "properties": {"id": {"type": ["string", "integer"]}, "status": {"type": "string"}},
    },
    **dict(AREA_ERRORS.values()),
}

# What each status means when the exporter gives it itself.
OWN_STATUSES = {
    400: "Malformed request: body not JSON, not an object, or nested too deep.",
    401: "No or unknown bearer token (repeated failures are throttled: 429).",
    403: "A read token on an operation that changes data.",
    404: "Account not served by this replica, or the admin API is disabled.",
    408: "The request body did not arrive within server.body_timeout_seconds.",
    413: "Request body too large.",
    422: "A field breaks a rule; `fields` names each one. Nothing was sent upstream.",
    429: f"Too many requests: more than {GENERATE_PER_MINUTE} generate requests a minute for "
    "the account, its admin reads of the minute spent (admin.reads_per_minute), its "
    "talking-head reads of the day spent (admin.talking_head_reads_per_day), or too many "
    "failed authentications; see Retry-After. Nothing was sent upstream.",
    500: "An internal error of the exporter (logged).",
    502: "The platform could not be reached, refused the exporter's token, or answered a 2xx "
    "that is no success (an error body, or not JSON).",
    503: "Service unavailable.",
    504: "The platform did not answer in time.",
}

_ID_EXAMPLES = {"resource_id": "4f1c2a9e", "task_id": "7d0c6f1e-5b3a-4c1e-9a57-2f0e8b6d1c44"}
_HEADERS = {
    UPSTREAM_HEADER: {
        "description": "Set when the body is the platform's answer (its status); absent when "
        "the exporter answered itself.",
        "schema": {"type": "integer"},
    }
}

# OpenAPI links: follow a created resource or task with the operations that take its id.
_LINKS: dict[str, tuple[str, dict[str, str]]] = {
    "restream_create": (
        "$response.body#/resource_id",
        {
            "restream_get": "path.resource_id",
            "restream_update": "path.resource_id",
            "restream_status": "query.resource_id",
            "restream_history": "query.resource_id",
        },
    ),
    "th_generate": (
        "$response.body#/id",
        {
            "th_status": "path.task_id",
            "th_cancel": "path.task_id",
            "th_video_link": "path.task_id",
            "th_rename": "path.task_id",
            "th_delete": "path.task_id",
        },
    ),
}


def _links(route: Route) -> dict[str, Any]:
    if route.operation_id not in _LINKS:
        return {}
    source, targets = _LINKS[route.operation_id]
    return {
        target: {
            "operationId": target,
            "parameters": {"path.account": "$request.path.account", param: source},
        }
        for target, param in targets.items()
    }


def _text_or(schema: dict[str, Any]) -> dict[str, Any]:
    """JSON as the schema says, or the platform's non-JSON body passed through as text."""
    return {
        "application/json": {"schema": schema},
        "text/plain": {"schema": {"type": "string"}},
    }


def _error_response(code: int | None, area_error: str) -> dict[str, Any]:
    either = {"anyOf": [ref("Error"), ref(area_error)]}
    if code is None:
        return {
            "description": "Any other status is the platform's own answer, passed through "
            f"({UPSTREAM_HEADER} set), or an internal error of the exporter.",
            "headers": _HEADERS,
            "content": _text_or(either),
        }
    own = OWN_STATUSES[code]
    return {
        "description": f"{own} Or the platform's own {code}, passed through "
        f"({UPSTREAM_HEADER} set, the body then as the platform sent it).",
        "headers": _HEADERS,
        "content": _text_or(either),
    }


def _path_param(name: str, accounts: Sequence[str]) -> dict[str, Any]:
    if name == "account":
        schema: dict[str, Any] = {"type": "string"}
        if accounts:
            schema = {"type": "string", "enum": list(accounts), "examples": [accounts[0]]}
        return {
            "name": name,
            "in": "path",
            "required": True,
            "description": "An account this replica serves.",
            "schema": schema,
        }
    if name == "stream_name":
        return {"name": name, "in": "path", "required": True, "schema": STREAM_NAME_STRING}
    schema = {**SEGMENT_STRING, "examples": [_ID_EXAMPLES.get(name, "id")]}
    return {"name": name, "in": "path", "required": True, "schema": schema}


def _success_schema(route: Route) -> dict[str, Any]:
    if route.operation_id == "restream_create":
        return ref("RestreamCreated")
    if route.operation_id == "th_generate":
        return ref("TaskAccepted")
    return ref("UpstreamReply")


def _operation(route: Route, accounts: Sequence[str]) -> dict[str, Any]:
    params = [_path_param(name, accounts) for name in route.path_params]
    params += [
        {
            "name": q.name,
            "in": "query",
            "required": q.required,
            "description": q.description,
            "schema": q.document_schema,
        }
        for q in route.query
    ]
    success: dict[str, Any] = {
        "description": "The platform's answer, passed through with its status (secrets "
        f"masked); {UPSTREAM_HEADER} carries it.",
        "headers": _HEADERS,
        "content": {"application/json": {"schema": _success_schema(route)}},
    }
    if links := _links(route):
        success["links"] = links
    area_error = AREA_ERRORS[route.tag][0]
    responses: dict[str, Any] = {str(route.success): success}
    for code in OWN_STATUSES:
        responses[str(code)] = _error_response(code, area_error)
    responses["default"] = _error_response(None, area_error)
    rules = " ".join(f"{rule[0].upper()}{rule[1:]}." for rule in route.rules)
    op: dict[str, Any] = {
        "operationId": route.operation_id,
        "summary": route.summary,
        "description": f"Upstream: `{route.upstream}`. Needs the "
        f"{'write' if route.write else 'read or write'} token."
        + (f" Rules beyond the schemas (422 when broken): {rules}" if rules else ""),
        "tags": [route.tag],
        "parameters": params,
        "responses": responses,
        "security": [{"bearer": ["write"]}] if route.write else [{"bearer": []}],
    }
    if route.rules:
        op["x-rules"] = list(route.rules)
    if route.body is not None:
        op["requestBody"] = {
            "required": route.body_required,
            "content": {"application/json": {"schema": ref(route.body)}},
        }
    return op


def build_openapi(routes: tuple[Route, ...], accounts: Sequence[str] = ()) -> dict[str, Any]:
    """The document; ``accounts`` (those this replica serves) become the ``account`` enum."""
    paths: dict[str, dict[str, Any]] = {}
    for route in routes:
        paths.setdefault(route.openapi_path, {})[route.method.lower()] = _operation(route, accounts)
    paths["/openapi.json"] = {
        "get": {
            "operationId": "openapi",
            "summary": "This document (no authentication).",
            "tags": ["meta"],
            "security": [],
            "responses": {
                "200": {
                    "description": "The OpenAPI document.",
                    "content": {"application/json": {"schema": {"type": "object"}}},
                }
            },
        }
    }
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "cdnvideo-exporter admin API",
            "version": __version__,
            "description": "Authenticated pass-through to the streaming platform's restream, "
            "network DVR and talking-head operations. Every request is checked against the "
            "platform's rules before anything goes upstream; changes are audit-logged. Request "
            "bodies are closed: a field the schema does not name is refused (422), at every "
            f"level. An answer with the {UPSTREAM_HEADER} header carries the platform's status "
            "and body (the area's *PlatformError shape when it is an error); an answer without "
            "it is the exporter's own (Error).",
        },
        "servers": [{"url": "/api/v1"}],
        "paths": paths,
        "components": {
            "schemas": {**request_schemas(), **RESPONSE_SCHEMAS},
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "admin.read_token for reads; admin.write_token for everything.",
                }
            },
        },
    }
