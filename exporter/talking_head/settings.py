"""The talking-head area's settings section (``talking_head``) and what its quota poll spends of
the platform's monthly allowance (check-config warns past 10%)."""

from __future__ import annotations

from dataclasses import dataclass, field

from exporter.config import AreaSection, Settings, field_doc
from exporter.config import rules as r

TALKING_HEAD_MONTHLY_ALLOWANCE = 1500
SECONDS_PER_MONTH = 30 * 86400


@dataclass(frozen=True)
class TalkingHeadSettings:
    enabled: bool = field(
        default=True,
        metadata=field_doc("Poll talking-head configurations (voices, models, quota)."),
    )
    interval_seconds: float = field(
        default=21600.0,
        metadata=field_doc(
            "Quota poll period. Every poll spends one of the 1500 requests a month the "
            "platform allows per account (see the spend formula below).",
            rule=r.Rule("> 0; below 17280 check-config warns", r.positive().check),
        ),
    )


def requests_per_month(settings: Settings) -> float:
    """Talking-head requests the quota poll spends per account in a 30-day month."""
    section = TALKING_HEAD_SECTION.of(settings)
    if not section.enabled:
        return 0.0
    return SECONDS_PER_MONTH / section.interval_seconds


def warnings(settings: Settings) -> list[str]:
    spend = requests_per_month(settings)
    if spend > TALKING_HEAD_MONTHLY_ALLOWANCE * 0.10:
        return [
            f"talking_head.interval_seconds: "
            f"{TALKING_HEAD_SECTION.of(settings).interval_seconds:g} s spends "
            f"{spend:.0f} of the {TALKING_HEAD_MONTHLY_ALLOWANCE} talking-head requests a month "
            f"per account (more than 10%); 17280 s or more stays under 10%"
        ]
    return []


TALKING_HEAD_SECTION = AreaSection(
    "talking_head",
    TalkingHeadSettings,
    "Talking-head quota and catalogue.",
    warnings=warnings,
)
