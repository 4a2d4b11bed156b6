"""What check-config prints: the effective config with secrets masked, and warnings."""

from __future__ import annotations

import dataclasses
from typing import Any

from exporter.config.rules import traffic_cost_per_minute
from exporter.config.settings import (
    SECONDS_PER_MONTH,
    SECRET_MASK,
    TALKING_HEAD_MONTHLY_ALLOWANCE,
    Settings,
)


def masked_dict(settings: Settings) -> dict[str, Any]:
    """The effective config as plain data with every secret replaced by the mask."""

    def section(obj: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in dataclasses.fields(obj):
            value = getattr(obj, f.name)
            if f.metadata.get("secret") and value:
                value = SECRET_MASK
            elif isinstance(value, tuple):
                value = list(value)
            out[f.name] = value
        return out

    data: dict[str, Any] = {"upstream": section(settings.upstream)}
    data["accounts"] = (
        None if settings.accounts is None else [section(a) for a in settings.accounts]
    )
    for name in ("traffic", "restream", "dvr", "talking_head", "metrics"):
        data[name] = section(getattr(settings, name))
    for name, declared in settings.areas.items():
        data[name] = section(declared)
    data["listen"] = settings.listen
    data["web_config_file"] = settings.web_config_file
    data["shard"] = str(settings.shard)
    data["admin"] = section(settings.admin)
    data["log"] = section(settings.log)
    return data


def talking_head_requests_per_month(settings: Settings) -> float:
    """Talking-head requests the quota poll spends per account in a 30-day month."""
    if not settings.talking_head.enabled:
        return 0.0
    return SECONDS_PER_MONTH / settings.talking_head.interval_seconds


def traffic_requests_per_minute(settings: Settings) -> float:
    """Metrics requests per account per minute in steady state (rules.traffic_cost_per_minute)."""
    return traffic_cost_per_minute(settings.traffic)


def notes(settings: Settings) -> list[str]:
    """Facts check-config reports beside the config: what the settle schedule costs, and how
    to choose it from what the exporter measures."""
    t = settings.traffic
    if not t.enabled:
        return []
    stages = t.settle_stages
    schedule = ", ".join(f"{a} min" for a in stages) or "off"
    return [
        f"traffic.revisit_minutes: settle reads at {schedule} cost "
        f"{traffic_requests_per_minute(settings):.2f} metrics requests per minute per account; "
        "cdnvideo_traffic_late_share{after_minutes} (and the landing page) shows what each "
        "read adds: add a later age while the last one adds more than 0 "
        "(CdnvideoTrafficSettleTooShort), drop ages that add 0 for days (docs/windowing.md)"
    ]


def warnings(settings: Settings) -> list[str]:
    """Legal but risky choices that check-config reports."""
    out = []
    spend = talking_head_requests_per_month(settings)
    if spend > TALKING_HEAD_MONTHLY_ALLOWANCE * 0.10:
        out.append(
            f"talking_head.interval_seconds: {settings.talking_head.interval_seconds:g} s spends "
            f"{spend:.0f} of the {TALKING_HEAD_MONTHLY_ALLOWANCE} talking-head requests a month "
            f"per account (more than 10%); 17280 s or more stays under 10%"
        )
    t = settings.traffic
    if t.delay_seconds < 60:
        out.append(
            f"traffic.delay_seconds: {t.delay_seconds} s reads minutes before their figures "
            "settle; 120 s or more is recommended"
        )
    return out
