"""The traffic area, declared once (the registry: ``exporter.runtime.registry``)."""

from __future__ import annotations

from exporter.areakit import AreaCost, AreaDeclaration
from exporter.config import Settings
from exporter.config.report import traffic_requests_per_minute
from exporter.traffic.area import TrafficArea
from exporter.traffic.families import SPECS


def cost(settings: Settings) -> AreaCost | None:
    """First reads (1 or 2 requests a minute) plus the settle reads of the schedule, per
    account."""
    if not settings.traffic.enabled:
        return None
    per = traffic_requests_per_minute(settings)
    n = max(1, len(settings.accounts or ()))
    return AreaCost("traffic", per * n, how=f"{per:.2f} per account")


AREA = AreaDeclaration(
    name="traffic",
    title=TrafficArea.title,
    metrics_title="Traffic (`/app/metrics/v1/` and `/resources`)",
    specs=SPECS,
    build=TrafficArea,
    cost=cost,
)
