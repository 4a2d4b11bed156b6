"""The self-metrics the remote writer reports (the runtime's SelfMetrics has them)."""

from __future__ import annotations

from typing import Protocol

from prometheus_client import Counter, Gauge

OUTCOMES = ("sent", "rejected", "too_old", "retried")


class RemoteWriteMetrics(Protocol):
    remote_write_samples: Counter  # {outcome}
    remote_write_pending: Gauge  # {account}
    remote_write_oldest_age: Gauge  # {account}
    remote_write_last_minute: Gauge  # {account}
