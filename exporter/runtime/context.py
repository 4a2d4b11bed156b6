"""The objects one running exporter shares, built once and handed to every part."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from exporter.config import Settings
from exporter.exposition import Store
from exporter.runtime.polling import PollRunner
from exporter.runtime.selfmetrics import SelfMetrics
from exporter.support.clock import Clock
from exporter.support.logs import Redactor
from exporter.upstream import Operations, UpstreamClient
from exporter.web.history import TrafficHistory

AREAS_POLLED = ("traffic", "restream", "dvr", "talking_head")


@dataclass
class Context:
    """Everything a handler or poller may need; no module-level state anywhere else.

    ``accounts`` is the list this replica serves (configured, or discovered and sharded);
    it is replaced as a whole, never mutated in place.
    """

    settings: Settings
    clock: Clock
    store: Store
    metrics: SelfMetrics
    runner: PollRunner
    client: UpstreamClient
    ops: Operations
    redactor: Redactor
    accounts: tuple[str, ...] = ()
    started_at: float = 0.0
    # Hooks filled in by the areas at start-up (kept loose so each area stays independent).
    th_configurations: Callable[[str], Any] = field(default=lambda account: None)
    refresh_quota: Callable[[str], Awaitable[None]] | None = None
    extras: dict[str, Any] = field(default_factory=dict)
    # The landing page's charts: the last hour of traffic windows, fed by every publish.
    traffic_history: TrafficHistory = field(default_factory=TrafficHistory)

    def __post_init__(self) -> None:
        self.store.listen(self.traffic_history.record)

    def area_enabled(self, area: str) -> bool:
        s = self.settings
        return {
            "traffic": s.traffic.enabled,
            "restream": s.restream.enabled,
            "dvr": s.dvr.enabled,
            "talking_head": s.talking_head.enabled,
        }.get(area, False)
