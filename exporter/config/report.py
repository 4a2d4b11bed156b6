"""What check-config prints: the effective config with secrets masked, notes and warnings.

The areas' sections come from their declarations (``AreaSection``, handed down to config:
``declared_areas``), so this module names none of them."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from exporter.config.settings import SECRET_MASK, AreaSection, Settings, declared_areas
from exporter.support.secrets import plain_mask
from exporter.support.urls import mask_url


def _areas(areas: Sequence[AreaSection[Any]] | None) -> tuple[AreaSection[Any], ...]:
    return declared_areas() if areas is None else tuple(areas)


def masked_dict(
    settings: Settings, areas: Sequence[AreaSection[Any]] | None = None
) -> dict[str, Any]:
    """The effective config as plain data with every secret replaced by the mask."""

    def section(obj: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in dataclasses.fields(obj):
            value = getattr(obj, f.name)
            if f.metadata.get("secret") and value:
                value = SECRET_MASK
            elif f.metadata.get("url") and value:
                value = mask_url(value, plain_mask)  # ?token=..., user:password@
            elif dataclasses.is_dataclass(value) and not isinstance(value, type):
                value = section(value)  # a section inside a section (remote_write.basic_auth)
            elif isinstance(value, tuple):
                value = list(value)
            out[f.name] = value
        return out

    data: dict[str, Any] = {"upstream": section(settings.upstream)}
    data["accounts"] = (
        None if settings.accounts is None else [section(a) for a in settings.accounts]
    )
    for area in _areas(areas):
        data[area.name] = section(area.of(settings))
    data["metrics"] = section(settings.metrics)
    data["listen"] = settings.listen
    data["web_config_file"] = settings.web_config_file
    data["shard"] = str(settings.shard)
    data["admin"] = section(settings.admin)
    data["log"] = section(settings.log)
    return data


def notes(settings: Settings, areas: Sequence[AreaSection[Any]] | None = None) -> list[str]:
    """Facts check-config reports beside the config (each area's ``notes``), such as what
    the settle schedule costs and how to choose it from what the exporter measures."""
    return [note for area in _areas(areas) for note in area.notes(settings)]


def warnings(settings: Settings, areas: Sequence[AreaSection[Any]] | None = None) -> list[str]:
    """Legal but risky choices that check-config reports (each area's ``warnings``), in the
    order of the keys they name (``talking_head.interval_seconds`` before
    ``traffic.delay_seconds``), whatever the registry's order."""
    return sorted(warning for area in _areas(areas) for warning in area.warnings(settings))
