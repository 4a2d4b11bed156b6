"""The objects one running exporter shares, built once and handed to every part."""

from __future__ import annotations

from dataclasses import dataclass

from exporter.config import Settings
from exporter.exposition import Store
from exporter.runtime.polling import PollRunner
from exporter.runtime.selfmetrics import SelfMetrics
from exporter.support.clock import Clock
from exporter.support.logs import Redactor
from exporter.upstream import Operations, UpstreamClient


@dataclass
class Context:
    """The shared plumbing a handler or poller may need; no module-level state anywhere else.

    Only plain, typed objects: what belongs to one area (its pollers, caches, the task
    tracker) lives in that area (``exporter/<area>/area.py``) and is handed to whoever uses it.
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
