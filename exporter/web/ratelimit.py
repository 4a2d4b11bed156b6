"""A sliding-window request limit per key, on the injected clock (no sleeping in tests)."""

from __future__ import annotations

import hashlib
import math
from collections import OrderedDict, deque
from collections.abc import Mapping

from exporter.support.clock import Clock

# Keys one limit holds at most (addresses and credential digests for the failure throttle):
# one more evicts the key that has been idle longest, so memory stays fixed (a deque of at
# most ``limit`` times per key) and a failure costs the same however many keys are held.
MAX_KEYS = 10_000


class WindowLimit:
    """At most ``limit`` acquisitions per key within any ``window`` seconds.

    Per key only the latest ``limit`` times are kept (all that decide the next wait); keys
    are held in the order they were last counted, at most ``max_keys``.
    """

    def __init__(
        self, clock: Clock, limit: int = 10, window: float = 60.0, max_keys: int = MAX_KEYS
    ) -> None:
        self._clock = clock
        self.limit = limit
        self.window = window
        self.max_keys = max_keys
        self._hits: OrderedDict[str, deque[float]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._hits)

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
        """Count one event of ``key``, allowed or not (O(1): no key is scanned)."""
        hits = self._hits.get(key)
        if hits is None:
            hits = self._hits[key] = deque(maxlen=max(1, self.limit))
            if len(self._hits) > self.max_keys:
                self._hits.popitem(last=False)  # the key idle longest
        else:
            self._hits.move_to_end(key)
        hits.append(self._clock.time())

    def snapshot(self) -> dict[str, list[float]]:
        """The times counted per key, oldest first, for ``restore`` (after a restart)."""
        return {key: list(hits) for key, hits in self._hits.items() if hits}

    def restore(self, hits: Mapping[str, list[float]]) -> None:
        """Count again the times of ``snapshot`` that are still inside the window."""
        cutoff = self._clock.time() - self.window
        for key, times in hits.items():
            kept = sorted(t for t in times if t > cutoff)
            if kept:
                self._hits[key] = deque(kept, maxlen=max(1, self.limit))


class FailureThrottle:
    """Failed authentications of every authenticated route (the admin API, its OpenAPI
    document, ``POST /-/reload``) counted together, per address and per credential
    (``admin.auth_failures_per_minute``): past the limit, each answers 429 instead of 401."""

    def __init__(self, clock: Clock, limit: int, proxy_header: str, window: float = 60.0):
        self.limit = limit
        self.window = window
        self._proxy_header = proxy_header
        self._counts = WindowLimit(clock, limit, window)

    def __len__(self) -> int:
        return len(self._counts)

    def failed(self, remote: str | None, headers: Mapping[str, str], presented: str | None) -> int:
        """Count one failure; 0 to answer it 401, else the seconds for ``Retry-After``."""
        keys = failure_keys(client_address(remote, headers, self._proxy_header), presented)
        wait = max(self._counts.wait(key) for key in keys)
        for key in keys:
            self._counts.note(key)
        return wait

    def message(self, wait: int) -> str:
        return (
            f"more than {self.limit} failed authentications from this address or with this "
            f"credential in {self.window:g} s; retry in {wait} s"
        )


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
