"""The DVR area's settings section (``dvr``); the streams are each account's ``dvr_streams``."""

from __future__ import annotations

from dataclasses import dataclass, field

from exporter.config import AreaSection, field_doc
from exporter.config import rules as r


@dataclass(frozen=True)
class DvrSettings:
    enabled: bool = field(
        default=True, metadata=field_doc("Poll the `dvr_streams` of every account.")
    )
    interval_seconds: float = field(
        default=60.0, metadata=field_doc("DVR poll period.", rule=r.positive())
    )
    poll_slices: int = field(
        default=1,
        metadata=field_doc(
            "Read each account's streams in this many slices, one slice per poll in turn: a "
            "stream is read once every `poll_slices` polls (its figures up to that many "
            "intervals old) and DVR sends that many times fewer requests "
            "(docs/performance.md). 1 = every stream on every poll.",
            rule=r.at_least(1),
        ),
    )


DVR_SECTION = AreaSection("dvr", DvrSettings, "Network DVR archives of the listed streams.")
