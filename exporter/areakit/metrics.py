"""What the areas record in the exporter's self-metrics, as a narrow protocol.

The self-metrics live in ``exporter.runtime`` (a layer above the areas); an area sees only
the families it writes, so no area package imports ``runtime``.
"""

from __future__ import annotations

from typing import Protocol

from prometheus_client import Counter, Gauge


class AreaMetrics(Protocol):
    """The families the areas write (all of them the traffic area's)."""

    traffic_windows: Counter  # minutes by outcome
    traffic_lag: Gauge
    traffic_windows_owed: Gauge  # settle reads due and not yet done
    traffic_settle_overdue: Gauge
    polls_postponed: Counter
    values_rejected: Counter
    series_dropped: Counter
    clock_skew: Gauge
    clock_readings_rejected: Counter
    state_entries_rejected: Counter
    state_save_failures: Counter
    state_last_save: Gauge

    def start_traffic_account(self, account: str) -> None:
        """Expose every traffic window outcome of ``account`` at 0."""
        ...
