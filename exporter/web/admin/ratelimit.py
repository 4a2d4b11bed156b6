"""A sliding-window request limit per key, on the injected clock (no sleeping in tests)."""

from __future__ import annotations

import math
from collections import deque

from exporter.clock import Clock


class WindowLimit:
    """At most ``limit`` acquisitions per key within any ``window`` seconds."""

    def __init__(self, clock: Clock, limit: int = 10, window: float = 60.0) -> None:
        self._clock = clock
        self.limit = limit
        self.window = window
        self._hits: dict[str, deque[float]] = {}

    def acquire(self, key: str) -> int:
        """0 when allowed (and counted); otherwise the whole seconds until a slot frees up."""
        now = self._clock.time()
        hits = self._hits.setdefault(key, deque())
        while hits and hits[0] <= now - self.window:
            hits.popleft()
        if len(hits) >= self.limit:
            return max(1, math.ceil(hits[0] + self.window - now))
        hits.append(now)
        return 0
