"""The traffic area, declared once (the registry: ``exporter.runtime.registry``)."""

from __future__ import annotations

from exporter.areakit import AreaCost, AreaDeclaration
from exporter.config import Settings
from exporter.traffic.area import TrafficArea
from exporter.traffic.audit import AUDIT_SPECS
from exporter.traffic.families import SPECS
from exporter.traffic.landing import PART
from exporter.traffic.settings import TRAFFIC_SECTION, cost_per_minute, requests_per_minute
from exporter.traffic.summary import summary


def cost(settings: Settings) -> AreaCost | None:
    """First reads (1 or 2 requests a minute) plus the settle reads of the schedule, per
    account; and what they cost on a platform that answers 1-minute windows only."""
    traffic = TRAFFIC_SECTION.of(settings)
    if not traffic.enabled:
        return None
    per = requests_per_minute(settings)
    n = max(1, len(settings.accounts or ()))
    one = cost_per_minute(traffic, 1)
    how = f"{per:.2f} per account; {one:.2f} if the platform answers 1-minute windows only"
    return AreaCost("traffic", per * n, how=how)


AREA = AreaDeclaration(
    name=TrafficArea.name,
    title=TrafficArea.title,
    metrics_title="Traffic (`/app/metrics/v1/` and `/resources`)",
    specs=(*SPECS, *AUDIT_SPECS),
    build=TrafficArea,
    cost=cost,
    settings=TRAFFIC_SECTION,
    summary=summary,
    landing=PART,
)
