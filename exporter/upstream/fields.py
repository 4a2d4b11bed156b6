"""Typed readers of a reply's fields, shared by every parse of a platform reply.

A field that is not what the parse relies on is the reply's fault: each reader raises
UpstreamError kind ``invalid_body`` naming where in the body it looked (``data[3].dvr.window``),
so a poll fails as it does for any reply that is no usable answer. They live here, beside the
error they raise, because the upstream client parses its own replies with them (the token and
the account list) and every area's ``reply.py`` parses its replies with them; support/ is below
upstream/ and cannot raise its error.
"""

from __future__ import annotations

import math
from typing import Any

from exporter.upstream.errors import UpstreamError


def fail(area: str, where: str, what: str) -> UpstreamError:
    """The error of a reply field ``where`` that is not what it should be."""
    return UpstreamError(area, "invalid_body", f"{where}: {what}", 200)


def obj(value: Any, area: str, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise fail(area, where, f"expected an object, got {type(value).__name__}")
    return value


def lst(value: Any, area: str, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise fail(area, where, f"expected a list, got {type(value).__name__}")
    return value


def text(d: dict[str, Any], key: str, area: str, where: str, default: str | None = None) -> str:
    value = d.get(key, default)
    if not isinstance(value, str):
        raise fail(area, f"{where}.{key}", f"expected a string, got {value!r:.40}")
    return value


def number(
    d: dict[str, Any], key: str, area: str, where: str, default: float | None = None
) -> float:
    value = d.get(key, default)
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:  # an int beyond the float range overflows
            number = float(value)
        except OverflowError:
            number = math.inf
        if math.isfinite(number):
            return number
    raise fail(area, f"{where}.{key}", f"expected a finite number, got {value!r:.40}")


def optional_number(d: dict[str, Any], key: str, area: str, where: str) -> float:
    """A number that may be missing or null (then 0); anything else but a number is refused."""
    value = d.get(key)
    if value is None or value == "":
        return 0.0
    return number(d, key, area, where)


def flag(d: dict[str, Any], key: str, area: str, where: str, default: bool | None = None) -> bool:
    value = d.get(key, default)
    if not isinstance(value, bool):
        raise fail(area, f"{where}.{key}", f"expected true or false, got {value!r:.40}")
    return value
