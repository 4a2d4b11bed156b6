"""What the traffic poller records in the exporter's self-metrics, as a narrow protocol.

The self-metrics live in ``exporter.runtime`` (a layer above the areas); the poller sees only
the families it writes, so nothing in this package imports ``runtime``.
"""

from __future__ import annotations

from typing import Protocol

from prometheus_client import Counter, Gauge


class TrafficMetrics(Protocol):
    """The families ``TrafficPoller`` writes."""

    traffic_windows: Counter  # minutes by outcome
    traffic_lag: Gauge
    polls_postponed: Counter
    values_rejected: Counter
    series_dropped: Counter
    clock_skew: Gauge
    clock_readings_rejected: Counter
    state_entries_rejected: Counter
    state_save_failures: Counter
    state_last_save: Gauge
