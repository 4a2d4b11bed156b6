"""A sliding-window request limit per key, on the injected clock (no sleeping in tests)."""

from __future__ import annotations

import hashlib
import math
from collections import deque
from collections.abc import Mapping

from exporter.support.clock import Clock

_MAX_KEYS = 10_000  # beyond this many keys, keys with no event in the window are dropped


class WindowLimit:
    """At most ``limit`` acquisitions per key within any ``window`` seconds."""

    def __init__(self, clock: Clock, limit: int = 10, window: float = 60.0) -> None:
        self._clock = clock
        self.limit = limit
        self.window = window
        self._hits: dict[str, deque[float]] = {}

    def acquire(self, key: str) -> int:
        """0 when allowed (and counted); otherwise the whole seconds until a slot frees up."""
        wait = self.wait(key)
        if not wait:
            self.note(key)
        return wait

    def wait(self, key: str) -> int:
        """0 while ``key`` is under the limit; otherwise the whole seconds until it is again."""
        now = self._clock.time()
        hits = self._hits.get(key)
        if not hits:
            return 0
        while hits and hits[0] <= now - self.window:
            hits.popleft()
        if len(hits) >= self.limit:
            return max(1, math.ceil(hits[0] + self.window - now))
        return 0

    def note(self, key: str) -> None:
        """Count one event of ``key``, allowed or not."""
        if len(self._hits) >= _MAX_KEYS:
            self._forget_idle()
        self._hits.setdefault(key, deque()).append(self._clock.time())

    def snapshot(self) -> dict[str, list[float]]:
        """The times counted per key, oldest first, for ``restore`` (after a restart)."""
        return {key: list(hits) for key, hits in self._hits.items() if hits}

    def restore(self, hits: Mapping[str, list[float]]) -> None:
        """Count again the times of ``snapshot`` that are still inside the window."""
        cutoff = self._clock.time() - self.window
        for key, times in hits.items():
            kept = sorted(t for t in times if t > cutoff)
            if kept:
                self._hits[key] = deque(kept)

    def _forget_idle(self) -> None:
        cutoff = self._clock.time() - self.window
        for key in [k for k, hits in self._hits.items() if not hits or hits[-1] <= cutoff]:
            del self._hits[key]


def client_address(remote: str | None, headers: Mapping[str, str], proxy_header: str) -> str:
    """The caller's address: the connection's, or, when ``proxy_header`` is configured and
    sent, the last address in it (the one the trusted proxy in front saw; addresses before it
    were written by whoever sent the request)."""
    if proxy_header:
        forwarded = headers.get(proxy_header, "").rsplit(",", 1)[-1].strip()
        if forwarded:
            return forwarded[:64]
    return remote or ""


def failure_keys(address: str, presented: str | None) -> tuple[str, str]:
    """The keys a failed authentication is counted under: the address, and the credential as
    presented (a digest: the value is never kept), so a stale token sent from many addresses
    is throttled as well as guessing from one address."""
    digest = hashlib.sha256((presented or "").encode()).hexdigest()[:16]
    return f"address {address}", f"credential {digest}"
