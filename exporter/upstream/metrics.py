"""What the upstream layer records in the exporter's self-metrics, as a narrow protocol.

The self-metrics live in ``exporter.runtime`` (a layer above); the client and the budget only
see the families they write, so nothing here imports ``runtime``.
"""

from __future__ import annotations

from typing import Protocol

from prometheus_client import Counter, Gauge, Histogram


class ClientMetrics(Protocol):
    """The families ``UpstreamClient`` writes: one observation and one count per request."""

    upstream_duration: Histogram
    upstream_requests: Counter


class BudgetMetrics(Protocol):
    """The families ``RequestBudget`` writes: refusals and each account's allowance."""

    rate_limited: Counter
    budget_in_use: Gauge
    budget_limit: Gauge


class UpstreamMetrics(ClientMetrics, BudgetMetrics, Protocol):
    """Both: the client hands its metrics on to the budget it owns."""
