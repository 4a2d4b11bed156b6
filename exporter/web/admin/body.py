"""An admin request's JSON body: read within ``server.body_timeout_seconds``, strict JSON (no
NaN, no key twice), nested at most ``MAX_JSON_DEPTH`` levels; anything else is refused."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from aiohttp import web

from exporter.web.admin.core import Rejected, invalid
from exporter.web.admin.validation import FieldError

MAX_JSON_DEPTH = 32  # deeper request bodies are refused (400) before anything walks them


def _number(text: str) -> int | float:
    """A JSON number with a fraction or exponent; whole ones become int (JSON Schema's integer
    includes 1.0, so the checks and the platform see 1)."""
    value = float(text)
    return int(value) if value.is_integer() else value


class DuplicateKey(ValueError):
    """A JSON object names one key twice (json.loads would keep the last one silently)."""

    def __init__(self, key: str) -> None:
        super().__init__(f"duplicate key {key!r}")
        self.key = key


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKey(key)
        out[key] = value
    return out


def loads_strict(raw: bytes) -> Any:
    """A JSON body: no NaN or Infinity, no key twice in one object (``DuplicateKey``)."""

    def reject(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    return json.loads(
        raw.decode("utf-8"), parse_constant=reject, parse_float=_number, object_pairs_hook=_unique
    )


async def read_body(request: web.Request, required: bool, seconds: float) -> Any:
    """The body as JSON; an empty one is ``{}`` unless ``required`` (then 400)."""
    try:
        async with asyncio.timeout(seconds):
            raw = await request.read()
    except TimeoutError:
        raise Rejected(
            408,
            "body_timeout",
            f"the request body did not arrive within {seconds:g} s (server.body_timeout_seconds)",
            headers={"Connection": "close"},
        ) from None
    except web.HTTPRequestEntityTooLarge:
        raise Rejected(
            413,
            "body_too_large",
            f"the request body is larger than {request.client_max_size} bytes",
        ) from None
    if not raw.strip():
        if required:
            raise invalid([FieldError("body", "required: a JSON object")], 400)
        return {}
    try:
        body = loads_strict(raw)
    except DuplicateKey as exc:
        message = f"the key {exc.key!r} appears twice in one object; send it once"
        raise invalid([FieldError("body", message)], 400) from None
    except (ValueError, RecursionError):
        raise invalid([FieldError("body", "not valid JSON")], 400) from None
    if json_depth(body) > MAX_JSON_DEPTH:
        message = f"JSON nested deeper than {MAX_JSON_DEPTH} levels"
        raise invalid([FieldError("body", message)], 400)
    return body


def json_depth(value: Any) -> int:
    """How deeply objects and lists nest in a JSON value (a scalar is 0); no recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            depth += 1
            deepest = max(deepest, depth)
            if depth > MAX_JSON_DEPTH:
                return depth
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth) for child in children)
    return deepest
