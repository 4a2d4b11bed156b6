"""The restream area, declared once (the registry: ``exporter.runtime.registry``)."""

from __future__ import annotations

from exporter.areakit import AreaCost, AreaDeclaration, reload_applies
from exporter.config import Settings
from exporter.restream.area import RestreamArea
from exporter.restream.families import SPECS
from exporter.restream.landing import PART
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


AREA = AreaDeclaration(
    name=RestreamArea.name,
    title=RestreamArea.title,
    metrics_title="Restream",
    specs=SPECS,
    build=RestreamArea,
    cost=cost,
    live=reload_applies(RESTREAM_SECTION, "interval_seconds", "history_interval_seconds"),
    settings=RESTREAM_SECTION,
    summary=summary,
    landing=PART,
)
