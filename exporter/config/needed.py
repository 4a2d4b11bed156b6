"""Which keys of a config the enabled parts use: check-config asks only for those.

A ``${VAR}`` left unset is worth a word only where its value would be read. Not read are the
keys of a part that is off (``admin`` unless ``admin.enabled``, an area whose ``enabled`` is
false) and the half of the upstream login not chosen (``username``/``password`` beside a
token, ``token`` beside a username and password)::

    is_needed = needed(expanded_raw, areas)
    is_needed("admin.read_token")      # False while admin.enabled is false
    is_needed("upstream.username")     # False when upstream.token (or CDNVIDEO_TOKEN) is set
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import yaml

from exporter.config.settings import AdminSettings, AreaSection

# Switches and their default: the section's keys are read only when it is on.
_SWITCHED: dict[str, bool] = {"admin": AdminSettings.enabled}
_LOGIN = ("username", "password")
_FILE_OF = {"token": "token_file", "password": "password_file"}  # a key or its file gives it


def _on(value: Any, default: bool) -> bool:
    """An ``enabled`` value as the loader will read it (an expanded string is YAML)."""
    if isinstance(value, str):
        try:
            value = yaml.safe_load(value) if value.strip() else None
        except yaml.YAMLError:
            return default
    return value if isinstance(value, bool) else default


def _enabled_default(section: AreaSection[Any]) -> bool:
    for f in dataclasses.fields(section.type):
        if f.name == "enabled" and isinstance(f.default, bool):
            return f.default
    return True


def needed(raw: Mapping[str, Any], areas: Sequence[AreaSection[Any]]) -> Callable[[str], bool]:
    """``is_needed(key)`` for dotted keys (``admin.read_token``, ``upstream.password``) of the
    expanded document ``raw`` (the ``CDNVIDEO_*`` overrides applied)."""
    switched = dict(_SWITCHED) | {a.name: _enabled_default(a) for a in areas}
    off = set()
    for name, default in switched.items():
        section = raw.get(name)
        value = section.get("enabled") if isinstance(section, Mapping) else None
        if not _on(value, default):
            off.add(name)
    upstream = raw.get("upstream")
    up: Mapping[str, Any] = upstream if isinstance(upstream, Mapping) else {}

    def given(key: str) -> bool:
        return bool(up.get(key) or up.get(_FILE_OF.get(key, "")))

    unused_login: set[str] = set()
    if given("token"):
        unused_login = {f"upstream.{k}" for k in _LOGIN} | {"upstream.password_file"}
    elif all(given(k) for k in _LOGIN):
        unused_login = {"upstream.token", "upstream.token_file"}

    def is_needed(key: str) -> bool:
        section = key.partition(".")[0].partition("[")[0]
        return section not in off and key not in unused_login

    return is_needed
