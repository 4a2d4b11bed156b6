"""Typed reads from a parsed YAML mapping, as Go's YAML reads them; errors name the key."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from exporter.config import ConfigError


def hint(key: str, known: tuple[str, ...]) -> str:
    """' (did you mean ...?)' for a key close to a known one, else ''."""
    close = difflib.get_close_matches(key, list(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def mapping(raw: Any, where: str, known: tuple[str, ...] | None) -> dict[str, Any]:
    """A mapping with string keys (only ``known`` ones, unless None); None reads as {}."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: expected a mapping, got a {type(raw).__name__}")
    for key in raw:
        if not isinstance(key, str):
            raise ConfigError(f"{where}: keys must be strings, got {key!r}")
        if known is not None and key not in known:
            raise ConfigError(f"{where}.{key}: unknown key{hint(key, known)}")
    return raw


def scalar(value: Any, where: str) -> str:
    """A YAML scalar as Go's YAML reads it into a string (``1`` -> "1", ``true`` -> "true")."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if not isinstance(value, str | int | float):
        raise ConfigError(f"{where}: expected a string, got a {type(value).__name__}")
    return str(value)


def string(raw: Mapping[str, Any], key: str, where: str) -> str:
    """``raw[key]`` as a string, '' when absent."""
    value = raw.get(key)
    return "" if value is None else scalar(value, f"{where}.{key}")


def strings(raw: Mapping[str, Any], key: str, where: str) -> tuple[str, ...] | None:
    """``raw[key]`` as a list of strings, None when absent."""
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}.{key}: expected a list of strings")
    return tuple(value)
