"""Area of a path, each area's error body, and JSON body reading shared by the route modules."""

from __future__ import annotations

import json
from http import HTTPStatus
from typing import Any

from aiohttp import web

AREA_PREFIXES = (
    ("/app/metrics/v1", "traffic"),
    ("/app/restream/v2/", "restream"),
    ("/app/dvr-net/v1/", "dvr"),
    ("/app/th-api/v1/", "talking_head"),
    ("/app/oauth/v1/", "auth"),
    ("/app/inventory/v1/", "inventory"),
)
FAULT_MESSAGES = {
    500: "Internal server error",
    503: "Service unavailable",
    504: "Request execution timeout exceeded",
}


def area_for(path: str) -> str | None:
    for prefix, area in AREA_PREFIXES:
        if path.startswith(prefix):
            return area
    return None


def error_body(area: str | None, status: int, message: str) -> dict[str, Any]:
    """The error shape of the spec's Errors table (auth/inventory: `{status, message}`)."""
    if area == "traffic":
        return {"status": "error", "description": message}
    if area == "dvr":
        return {"status": HTTPStatus(status).phrase, "description": message}
    if area == "restream":
        return {"success": False, "code": status, "message": message}
    if area == "talking_head":
        return {"status": "ERROR", "message": message}
    if area in ("auth", "inventory"):
        return {"status": status, "message": message}
    return {"error": message}


def error(area: str | None, status: int, message: str, **extra: Any) -> web.Response:
    return web.json_response({**error_body(area, status, message), **extra}, status=status)


class BadJson(ValueError):
    """The request body is not JSON."""


async def json_body(request: web.Request, *, optional: bool = False) -> Any:
    """The parsed JSON body; None for an empty body when `optional`."""
    raw = await request.read()
    if not raw.strip():
        if optional:
            return None
        raise BadJson("Request body must be JSON")
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise BadJson("Request body must be valid JSON") from None
