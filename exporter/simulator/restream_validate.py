"""Checks a restream resource body (create and update) and fills the optional fields."""

from __future__ import annotations

import calendar
import time
from typing import Any


class BodyError(ValueError):
    """A body that breaks a rule; the message names the field."""


def parse_iso_z(value: str) -> int:
    """`YYYY-MM-DDThh:mm:ssZ` -> Unix seconds; ValueError otherwise."""
    return calendar.timegm(time.strptime(value, "%Y-%m-%dT%H:%M:%SZ"))


def _typed(obj: dict[str, Any], key: str, kind: type, where: str, default: Any = None) -> Any:
    if key not in obj:
        if default is None:
            raise BodyError(f"Field '{where}{key}' is required")
        return default
    value = obj[key]
    if kind is str and not isinstance(value, str):
        raise BodyError(f"Field '{where}{key}' must be a string")
    if kind is bool and not isinstance(value, bool):
        raise BodyError(f"Field '{where}{key}' must be a boolean")
    if kind is list and not isinstance(value, list):
        raise BodyError(f"Field '{where}{key}' must be an array")
    if kind is dict and not isinstance(value, dict):
        raise BodyError(f"Field '{where}{key}' must be an object")
    return value


def _schedule(value: list[Any], where: str) -> list[dict[str, str]]:
    out = []
    for i, window in enumerate(value):
        at = f"{where}schedule[{i}]."
        if not isinstance(window, dict):
            raise BodyError(f"Field '{where}schedule[{i}]' must be an object")
        start = _typed(window, "start", str, at)
        stop = _typed(window, "stop", str, at)
        try:
            if parse_iso_z(start) >= parse_iso_z(stop):
                raise BodyError(f"Field '{at}stop' must be after '{at}start'")
        except ValueError as exc:
            if isinstance(exc, BodyError):
                raise
            raise BodyError(f"Field '{at}start'/'stop' must be YYYY-MM-DDThh:mm:ssZ") from None
        out.append({"start": start, "stop": stop})
    return out


def _backup(value: dict[str, Any], where: str) -> dict[str, str]:
    if not value:
        return {}
    at = f"{where}backup."
    return {
        "target_url": _typed(value, "target_url", str, at),
        "login": _typed(value, "login", str, at, ""),
        "password": _typed(value, "password", str, at, ""),
    }


def _entry(value: Any, i: int) -> dict[str, Any]:
    where = f"restreams[{i}]."
    if not isinstance(value, dict):
        raise BodyError(f"Field 'restreams[{i}]' must be an object")
    transcoded = _typed(value, "transcoded", bool, where, False)
    return {
        "schedule": _schedule(_typed(value, "schedule", list, where, []), where),
        "source": _typed(value, "source", str, where),
        "transcoded": transcoded,
        "transcode_quality": _typed(
            value, "transcode_quality", str, where, "360p" if transcoded else ""
        ),
        "target_type": _typed(value, "target_type", str, where, "customRTMP"),
        "target_url": _typed(value, "target_url", str, where),
        "target_key": _typed(value, "target_key", str, where, ""),
        "login": _typed(value, "login", str, where, ""),
        "password": _typed(value, "password", str, where, ""),
        "backup": _backup(_typed(value, "backup", dict, where, {}), where),
    }


def validate_resource(body: Any) -> dict[str, Any]:
    """The stored form of a create/update body: name, type, active, restreams (filled in).

    Required: name, type, active, restreams, and per entry source and target_url.
    Unknown fields (and resource_id or timestamps) are dropped.
    """
    if not isinstance(body, dict):
        raise BodyError("Request body must be a JSON object")
    name = _typed(body, "name", str, "")
    if not name:
        raise BodyError("Field 'name' must not be empty")
    restreams = _typed(body, "restreams", list, "")
    return {
        "name": name,
        "type": _typed(body, "type", str, ""),
        "active": _typed(body, "active", bool, ""),
        "restreams": [_entry(e, i) for i, e in enumerate(restreams)],
    }
