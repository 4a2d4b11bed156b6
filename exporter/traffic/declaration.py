"""The traffic area, declared once (the registry: ``exporter.runtime.registry``)."""

from __future__ import annotations

from exporter.areakit import AreaCost, AreaDeclaration
from exporter.config import Settings
from exporter.traffic.area import TrafficArea
from exporter.traffic.audit import AUDIT_SPECS
from exporter.traffic.families import SPECS
from exporter.traffic.settings import TRAFFIC_SECTION, requests_per_minute
from exporter.traffic.summary import summary


def cost(settings: Settings) -> AreaCost | None:
    """First reads (1 or 2 requests a minute) plus the settle reads of the schedule, per
    account."""
    if not TRAFFIC_SECTION.of(settings).enabled:
        return None
    per = requests_per_minute(settings)
    n = max(1, len(settings.accounts or ()))
    return AreaCost("traffic", per * n, how=f"{per:.2f} per account")


AREA = AreaDeclaration(
    name=TrafficArea.name,
    title=TrafficArea.title,
    metrics_title="Traffic (`/app/metrics/v1/` and `/resources`)",
    specs=(*SPECS, *AUDIT_SPECS),
    build=TrafficArea,
    cost=cost,
    settings=TRAFFIC_SECTION,
    summary=summary,
)
