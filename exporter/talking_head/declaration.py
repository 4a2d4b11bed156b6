"""The talking-head area, declared once (the registry: ``exporter.runtime.registry``)."""

from __future__ import annotations

from exporter.areakit import AreaCost, AreaDeclaration, reload_applies
from exporter.config import Settings
from exporter.talking_head.area import TalkingHeadArea
from exporter.talking_head.families import SPECS
from exporter.talking_head.landing import PART
from exporter.talking_head.settings import TALKING_HEAD_SECTION
from exporter.talking_head.summary import summary
from exporter.talking_head.tasks import TASKS


def cost(settings: Settings) -> AreaCost | None:
    """One quota request every ``interval_seconds``, per account."""
    h = TALKING_HEAD_SECTION.of(settings)
    if not h.enabled:
        return None
    return AreaCost(
        "talking_head",
        60 / h.interval_seconds * max(1, len(settings.accounts or ())),
        how=f"every {h.interval_seconds:g} s per account",
    )


AREA = AreaDeclaration(
    name=TalkingHeadArea.name,
    title=TalkingHeadArea.title,
    metrics_title="Talking-head video",
    specs=(*SPECS, TASKS),
    build=TalkingHeadArea,
    cost=cost,
    live=reload_applies(TALKING_HEAD_SECTION, "interval_seconds"),
    settings=TALKING_HEAD_SECTION,
    summary=summary,
    landing=PART,
)
