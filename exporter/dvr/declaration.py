"""The DVR area, declared once (the registry: ``exporter.runtime.registry``)."""

from __future__ import annotations

import dataclasses

from exporter.areakit import AreaCost, AreaDeclaration
from exporter.config import Settings
from exporter.dvr.area import DvrArea
from exporter.dvr.families import SPECS
from exporter.dvr.settings import DVR_SECTION
from exporter.dvr.summary import summary


def cost(settings: Settings) -> AreaCost | None:
    """One request per configured stream every ``interval_seconds`` (spread over the interval
    when a request budget is set)."""
    d = DVR_SECTION.of(settings)
    if not d.enabled:
        return None
    streams = sum(len(a.dvr_streams) for a in settings.accounts or ())
    return AreaCost(
        "dvr",
        streams * 60 / d.interval_seconds / d.poll_slices,
        how=f"{streams} stream(s) every {d.interval_seconds * d.poll_slices:g} s"
        + (f" ({d.poll_slices} slices)" if d.poll_slices > 1 else ""),
    )


def live(old: Settings, new: Settings) -> Settings:
    """A reload applies the interval."""
    interval = DVR_SECTION.of(new).interval_seconds
    return DVR_SECTION.replace(
        old, dataclasses.replace(DVR_SECTION.of(old), interval_seconds=interval)
    )


AREA = AreaDeclaration(
    name="dvr",
    title=DvrArea.title,
    metrics_title="Network DVR",
    specs=SPECS,
    build=DvrArea,
    cost=cost,
    live=live,
    settings=DVR_SECTION,
    summary=summary,
)
