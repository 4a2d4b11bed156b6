"""The registry: every polled area, one declaration each, in the order pages and documents
list them. Adding an area is its package (with ``declaration.AREA``) and one line here.

Every part that goes over the areas reads ``declarations()`` when it runs (the Service and its
``Areas``, the self-metrics, the metric reference, check-config's request cost, the reload,
the landing page's parts, and the config loader through ``settings_sections``), so nothing
keeps a list of its own; only the composition root (exporter/web/daemon.py) names the areas
again, in the demo's config (tests/structure/test_layers.py).
"""

from __future__ import annotations

from typing import Any

from exporter.areakit import AreaDeclaration
from exporter.config import AreaSection, declare_areas
from exporter.dvr.declaration import AREA as DVR
from exporter.remotewrite.settings import REMOTE_WRITE_SECTION
from exporter.restream.declaration import AREA as RESTREAM
from exporter.talking_head.declaration import AREA as TALKING_HEAD
from exporter.traffic.declaration import AREA as TRAFFIC

REGISTRY: tuple[AreaDeclaration, ...] = (
    TRAFFIC,
    RESTREAM,
    DVR,
    TALKING_HEAD,
)


def declarations() -> tuple[AreaDeclaration, ...]:
    """The areas of the registry, in their order."""
    return REGISTRY


def area_names() -> tuple[str, ...]:
    return tuple(d.name for d in REGISTRY)


def settings_sections() -> tuple[AreaSection[Any], ...]:
    """The settings sections the areas declare (``AreaDeclaration.settings``), in the
    registry's order: what the loader reads into ``Settings.areas``, docs/configuration.md
    and check-config list, and whose rules, notes and warnings they run."""
    areas = tuple(d.settings for d in REGISTRY if d.settings is not None)
    return (*areas, REMOTE_WRITE_SECTION)  # an output, not an area: read and listed the same


# config names no area: it reads the sections through this (``config.declared_areas``).
declare_areas(settings_sections)
