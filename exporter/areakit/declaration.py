"""An area's declaration: everything the rest of the exporter needs to know of one area, in one
value its package exports as ``AREA`` (``exporter/<area>/declaration.py``).

The registry (``exporter.runtime.registry``) is one list of these; the Service, the
self-metrics, the metric reference (docgen), check-config's request cost, the config loader
and the landing page read it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from exporter.areakit.area import Area, AreaContext
from exporter.areakit.page import LandingPart
from exporter.config import AreaSection, Settings
from exporter.exposition import MetricSpec, Store


def reload_applies(
    section: AreaSection[Any], *keys: str
) -> Callable[[Settings, Settings], Settings]:
    """An area's ``live``: ``old`` with ``keys`` of its ``section`` taken from ``new`` (what a
    reload applies without a restart)."""

    def live(old: Settings, new: Settings) -> Settings:
        fresh = section.of(new)
        taken = {key: getattr(fresh, key) for key in keys}
        return section.replace(old, dataclasses.replace(section.of(old), **taken))

    return live


@dataclass(frozen=True)
class AreaCost:
    """One area's requests a minute: ``fixed`` for the accounts at hand, plus ``per_resource``
    for each restream resource (restream only; 0 elsewhere). A restream status change costs
    one more request, at the next history poll."""

    area: str
    fixed: float
    per_resource: float = 0.0
    how: str = ""


@dataclass(frozen=True)
class AreaDeclaration:
    """One polled area.

    ``name`` is its ``area`` label, store key and settings section; ``title`` what the landing
    page shows; ``metrics_title`` its section heading in docs/metrics.md; ``specs`` every family
    it exposes (the metric reference lists them in this order); ``build`` makes the running
    area from the exporter's context; ``cost`` is its upstream requests a minute for a config
    (None when the area is disabled), as check-config prints it; ``live(old, new)`` is
    ``old`` with the keys of the area's section a reload applies taken from ``new`` (by
    default none: the area's changes wait for a restart). ``settings`` is the area's
    settings section (``<area>/settings.py``: its type, defaults, the rules, notes and
    warnings that involve other sections): the loader reads it into ``settings.areas[name]``,
    docs/configuration.md and check-config list it, and the area's code reads it typed with
    ``SECTION.of(settings)``. None: an area without settings. ``summary(store, account)`` is
    what the landing page shows of the account (``<area>/summary.py``: a typed value derived
    from what the area published; ``runtime.summary.account_summary`` collects them); None:
    the page shows the area's health only. ``landing`` is the area's part of each account's
    section on the landing page and what its first block says is wrong (``<area>/landing.py``,
    reading that summary); None: the area shows in the health table only.
    """

    name: str
    title: str
    metrics_title: str
    specs: tuple[MetricSpec, ...]
    build: Callable[[AreaContext], Area]
    cost: Callable[[Settings], AreaCost | None]
    live: Callable[[Settings, Settings], Settings] = field(default=lambda old, new: old)
    settings: AreaSection[Any] | None = None
    summary: Callable[[Store, str], object] | None = None
    landing: LandingPart | None = None
