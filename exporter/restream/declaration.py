"""The restream area, declared once (the registry: ``exporter.runtime.registry``)."""

from __future__ import annotations

import dataclasses

from exporter.areakit import AreaCost, AreaDeclaration
from exporter.config import Settings
from exporter.restream.area import RestreamArea
from exporter.restream.families import SPECS
from exporter.restream.poller import HISTORY_ROUND_ROBIN_POLLS
from exporter.restream.settings import RESTREAM_SECTION
from exporter.restream.summary import summary


def cost(settings: Settings) -> AreaCost | None:
    """``/resources`` and ``/status`` every ``interval_seconds``; every
    ``history_interval_seconds`` one ``/history`` per resource read: those whose status
    changed, and a round-robin share so each is read once in ``HISTORY_ROUND_ROBIN_POLLS``
    polls. The number of restream resources is the platform's, so history is given per
    resource (and a status change costs one request more)."""
    r = RESTREAM_SECTION.of(settings)
    if not r.enabled:
        return None
    status = 2 * 60 / r.interval_seconds
    history = 60 / r.history_interval_seconds
    return AreaCost(
        "restream",
        status * max(1, len(settings.accounts or ())),
        per_resource=history / HISTORY_ROUND_ROBIN_POLLS,
        how=f"status {status:.2f} per account; each resource's history once in "
        f"{HISTORY_ROUND_ROBIN_POLLS} polls of {r.history_interval_seconds:g} s, and "
        "one request per status change",
    )


def live(old: Settings, new: Settings) -> Settings:
    """A reload applies the two intervals."""
    n = RESTREAM_SECTION.of(new)
    section = dataclasses.replace(
        RESTREAM_SECTION.of(old),
        interval_seconds=n.interval_seconds,
        history_interval_seconds=n.history_interval_seconds,
    )
    return RESTREAM_SECTION.replace(old, section)


AREA = AreaDeclaration(
    name="restream",
    title=RestreamArea.title,
    metrics_title="Restream",
    specs=SPECS,
    build=RestreamArea,
    cost=cost,
    live=live,
    settings=RESTREAM_SECTION,
    summary=summary,
)
