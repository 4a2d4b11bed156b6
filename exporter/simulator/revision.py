"""Quirk revise-after-settle: one minute an hour gains a request long after it was final."""

from __future__ import annotations

from exporter.simulator.traffic_model import EDGE_2XX, EDGE_REQ, EDGE_STATUS0
from exporter.simulator.traffic_window import Value

REVISED_MINUTE_OF_HOUR = 7  # hh:07 of every hour
REVISE_AFTER_SECONDS = 1800.0  # after the minute closed: past the exporter's default settle age
EDGE_200 = EDGE_STATUS0  # STATUS_CODES starts with "200"


def revised_minutes(start: int, minutes: int, now: float) -> int:
    """How many minutes of [start, start + minutes) the platform has revised by ``now``."""
    return sum(
        1
        for m in range(start, start + 60 * minutes, 60)
        if (m // 60) % 60 == REVISED_MINUTE_OF_HOUR and now >= m + 60 + REVISE_AFTER_SECONDS
    )


def revise(values: list[Value], count: int) -> list[Value]:
    """``values`` (row layout) with ``count`` more edge requests, each a 200."""
    if count:
        for i in (EDGE_REQ, EDGE_200, EDGE_2XX):
            values[i] += count
    return values
