"""The DVR area, declared once (the registry: ``exporter.runtime.registry``)."""

from __future__ import annotations

from exporter.areakit import AreaCost, AreaDeclaration, reload_applies
from exporter.config import Settings
from exporter.dvr.area import DvrArea
from exporter.dvr.families import SPECS
from exporter.dvr.landing import PART
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


AREA = AreaDeclaration(
    name=DvrArea.name,
    title=DvrArea.title,
    metrics_title="Network DVR",
    specs=SPECS,
    build=DvrArea,
    cost=cost,
    live=reload_applies(DVR_SECTION, "interval_seconds"),
    settings=DVR_SECTION,
    summary=summary,
    landing=PART,
)
