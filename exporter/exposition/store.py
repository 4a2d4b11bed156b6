"""Holds the latest fragment per key, renders the whole exposition off the loop, swaps bytes in."""

from __future__ import annotations

import asyncio
import gzip
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

import structlog

from exporter.clock import Clock
from exporter.exposition.model import Fragment, MetricSpec

BACKGROUND_NOTE = " Polled in the background, not at scrape time."

log = structlog.get_logger("exporter.exposition")


@dataclass(frozen=True)
class Exposition:
    """One rendered scrape body, plain and gzip-compressed."""

    plain: bytes
    gzipped: bytes
    rendered_at: float
    series: int


@dataclass(frozen=True)
class _Entry:
    fragment: Fragment
    published_at: float
    max_age: float | None

    def fresh(self, now: float) -> bool:
        return self.max_age is None or now - self.published_at <= self.max_age


EMPTY = Exposition(b"", gzip.compress(b"", mtime=0), 0.0, 0)


class Store:
    """The latest fragment of every (area, account) key and the rendered exposition.

    ``publish`` replaces the whole entry mapping (copy on write), so the render thread always
    reads one consistent snapshot. A fragment older than its ``max_age`` is left out of the
    exposition (stale values are not shown as current) and can still be read for diagnostics.
    """

    def __init__(self, clock: Clock, extra: Callable[[], bytes] | None = None) -> None:
        self._clock = clock
        self._extra = extra
        self._entries: Mapping[str, _Entry] = MappingProxyType({})
        self._exposition = EMPTY
        self._dirty = asyncio.Event()
        self._render_lock = asyncio.Lock()

    # -- writers -----------------------------------------------------------------------------
    def publish(self, key: str, fragment: Fragment, max_age: float | None = None) -> None:
        entries = dict(self._entries)
        entries[key] = _Entry(fragment, self._clock.time(), max_age)
        self._entries = MappingProxyType(entries)
        self._dirty.set()

    def drop(self, key: str) -> None:
        if key in self._entries:
            entries = dict(self._entries)
            del entries[key]
            self._entries = MappingProxyType(entries)
            self._dirty.set()

    def mark_dirty(self) -> None:
        self._dirty.set()

    # -- readers -----------------------------------------------------------------------------
    @property
    def exposition(self) -> Exposition:
        return self._exposition

    def fragment(self, key: str, include_stale: bool = False) -> Fragment | None:
        entry = self._entries.get(key)
        if entry is None or not (include_stale or entry.fresh(self._clock.time())):
            return None
        return entry.fragment

    def keys(self) -> list[str]:
        """Every published key (``"<area>/<account>"``), stale ones included, sorted."""
        return sorted(self._entries)

    names = keys  # the same, for callers that read better with it

    # -- rendering ---------------------------------------------------------------------------
    def render_sync(self) -> Exposition:
        """Render every fresh fragment plus the extra (self-metrics) text; thread-safe."""
        now = self._clock.time()
        entries = self._entries
        fresh = [entries[k].fragment for k in sorted(entries) if entries[k].fresh(now)]
        families: dict[str, tuple[MetricSpec, list[bytes]]] = {}
        series = 0
        for frag in fresh:
            series += frag.series_count()
            for spec, body in frag.rendered().items():
                slot = families.get(spec.name)
                if slot is None:
                    families[spec.name] = (spec, [body])
                else:
                    if slot[0] != spec:
                        raise ValueError(f"metric {spec.name} declared twice with different specs")
                    slot[1].append(body)
        parts: list[bytes] = []
        for spec, bodies in families.values():
            noted = MetricSpec(spec.name, spec.type, spec.help + BACKGROUND_NOTE, spec.labels)
            parts.append(noted.header())
            parts.extend(bodies)
        if self._extra is not None:
            parts.append(self._extra())
        plain = b"".join(parts)
        return Exposition(plain, gzip.compress(plain, compresslevel=6, mtime=0), now, series)

    async def render(self) -> Exposition:
        """Render in a worker thread and swap the result in."""
        async with self._render_lock:
            self._dirty.clear()
            exposition = await asyncio.to_thread(self.render_sync)
            self._exposition = exposition
            return exposition

    async def run_renderer(self, idle_seconds: float = 5.0, settle_seconds: float = 0.2) -> None:
        """Background task: render after changes (debounced) and every ``idle_seconds`` anyway,
        so self-metrics stay fresh and aged-out fragments disappear."""
        while True:
            try:
                await asyncio.wait_for(self._dirty.wait(), timeout=idle_seconds)
                await asyncio.sleep(settle_seconds)
            except TimeoutError:
                pass
            try:
                await self.render()
            except Exception as exc:  # keep serving the last good body; never stop rendering
                log.error("render_failed", error=f"{type(exc).__name__}: {exc}")
                await asyncio.sleep(idle_seconds)
