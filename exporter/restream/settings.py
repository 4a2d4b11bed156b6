"""The restream area's settings section (``restream``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from exporter.config import AreaSection, field_doc
from exporter.config import rules as r


@dataclass(frozen=True)
class RestreamSettings:
    enabled: bool = field(default=True, metadata=field_doc("Poll restream resources and status."))
    interval_seconds: float = field(
        default=30.0,
        metadata=field_doc("Period of the resources + status poll.", rule=r.positive()),
    )
    history_interval_seconds: float = field(
        default=300.0, metadata=field_doc("Period of the status-history poll.", rule=r.positive())
    )


RESTREAM_SECTION = AreaSection("restream", RestreamSettings, "Restream resources, status, history.")
