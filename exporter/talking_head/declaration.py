"""The talking-head area, declared once (the registry: ``exporter.runtime.registry``)."""

from __future__ import annotations

import dataclasses

from exporter.areakit import AreaCost, AreaDeclaration
from exporter.config import Settings
from exporter.talking_head.area import TalkingHeadArea
from exporter.talking_head.families import SPECS
from exporter.talking_head.tasks import TASKS


def cost(settings: Settings) -> AreaCost | None:
    """One quota request every ``interval_seconds``, per account."""
    h = settings.talking_head
    if not h.enabled:
        return None
    return AreaCost(
        "talking_head",
        60 / h.interval_seconds * max(1, len(settings.accounts or ())),
        how=f"every {h.interval_seconds:g} s per account",
    )


def live(old: Settings, new: Settings) -> Settings:
    """A reload applies the interval."""
    interval = new.talking_head.interval_seconds
    section = dataclasses.replace(old.talking_head, interval_seconds=interval)
    return dataclasses.replace(old, talking_head=section)


AREA = AreaDeclaration(
    name="talking_head",
    title=TalkingHeadArea.title,
    metrics_title="Talking-head video",
    specs=(*SPECS, TASKS),
    build=TalkingHeadArea,
    cost=cost,
    live=live,
)
