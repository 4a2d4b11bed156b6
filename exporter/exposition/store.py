"""Holds the latest fragment per key, renders the whole exposition off the loop, swaps bytes in."""

from __future__ import annotations

import asyncio
import gzip
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import NamedTuple

import structlog

from exporter.exposition.deflate import Piece, Run, deflate, gzip_join
from exporter.exposition.formats import OPENMETRICS_EOF, Format
from exporter.exposition.model import Fragment, MetricSpec
from exporter.exposition.select import EVERYTHING, FamilySelection
from exporter.support.clock import Clock
from exporter.support.offloop import off_loop

BACKGROUND_NOTE = " Polled in the background, not at scrape time."
# The extra text (the self-metrics) is compressed at every render, unlike a fragment's chunks
# (once per change): zlib's fastest level. See
# docs/performance.md#self-metrics-text-and-the-state-files-numbers-written-cheaply.
EXTRA_LEVEL = 1

log = structlog.get_logger("exporter.exposition")


class Exposition:
    """One rendered scrape body in both formats: kept gzip-compressed; a plain scrape is
    decompressed as it is sent (``web.app``; Prometheus always asks for gzip; the plain text
    is many times larger). Both bodies share the compressed sample pieces; only the headers and the
    self-metrics differ. See docs/performance.md#how-cost-grows-with-resources."""

    __slots__ = ("gzipped", "openmetrics_gzipped", "rendered_at", "series", "upto")

    def __init__(
        self,
        gzipped: bytes,
        rendered_at: float,
        series: int,
        openmetrics_gzipped: bytes = b"",
        upto: int = 0,
    ) -> None:
        self.gzipped = gzipped
        self.openmetrics_gzipped = openmetrics_gzipped or _OPENMETRICS_EMPTY
        self.rendered_at = rendered_at
        self.series = series
        self.upto = upto  # the Store.sequence its fragments were taken at (or later)

    @property
    def plain(self) -> bytes:
        return gzip.decompress(self.gzipped)

    def compressed(self, fmt: Format) -> bytes:
        """The gzip body in ``fmt``."""
        return self.openmetrics_gzipped if fmt == "openmetrics" else self.gzipped


AfterRender = Callable[[bool, Exposition], None]
"""Called off the loop after each background render: (followed a change, the exposition)."""


def _nothing_after_render(changed: bool, exposition: Exposition) -> None:
    """The default ``after_render``: nothing (the daemon passes ``runtime.tuning.after_render``)."""


@dataclass(frozen=True)
class _Entry:
    fragment: Fragment
    published_at: float
    max_age: float | None

    def fresh(self, now: float) -> bool:
        return self.max_age is None or now - self.published_at <= self.max_age


_OPENMETRICS_EOF = deflate(OPENMETRICS_EOF)
_OPENMETRICS_EMPTY = gzip_join([_OPENMETRICS_EOF])
EMPTY = Exposition(gzip_join([]), 0.0, 0)


class StoreKey(NamedTuple):
    """Where a fragment lives: the area (or one of its parts, e.g. ``restream_history``) and
    the account. Keys sort by area, then account: the order fragments are rendered in."""

    area: str
    account: str

    def __str__(self) -> str:
        return f"{self.area}/{self.account}"


class Store:
    """The latest fragment of every ``StoreKey(area, account)`` and the rendered exposition.

    ``publish`` replaces the whole entry mapping (copy on write), so the render thread always
    reads one consistent snapshot. A fragment older than its ``max_age`` is left out of the
    exposition (stale values are not shown as current) and can still be read for diagnostics.

    ``sequence`` counts the changes of the entries; an exposition carries the sequence its
    fragments were taken at, and ``served`` is the highest one a scrape was answered with
    (``mark_served``): a fragment published at sequence ``n`` has been seen by a scraper once
    ``served >= n``.
    """

    def __init__(
        self,
        clock: Clock,
        extra: Callable[[], bytes] | None = None,
        selection: FamilySelection = EVERYTHING,
        extra_openmetrics: Callable[[], bytes] | None = None,
        after_render: AfterRender = _nothing_after_render,
    ) -> None:
        """``extra`` gives text appended to every render (the self-metrics) in the text format,
        ``extra_openmetrics`` the same in OpenMetrics, without ``# EOF``. ``after_render`` runs
        on the refresh thread after each render of ``run_renderer``, once the body is swapped in
        (the daemon gives memory back there: ``runtime.tuning.after_render``)."""
        self._clock = clock
        self._after_render = after_render
        # metrics.include/exclude: the areas build their fragments with it (selection.builder),
        # so the families left out are never built, stored or rendered.
        self.selection = selection
        self._extra = extra
        self._extra_openmetrics = extra_openmetrics
        self._entries: Mapping[StoreKey, _Entry] = MappingProxyType({})
        self._exposition = EMPTY
        self._dirty = asyncio.Event()
        self._render_lock = asyncio.Lock()
        # compressed HELP/TYPE per spec and format
        self._headers: dict[tuple[MetricSpec, Format], Piece] = {}
        self._listeners: list[Callable[[StoreKey, Fragment], None]] = []
        self._rendered: dict[StoreKey, Fragment] = {}  # written by the render thread only
        self._runs: dict[int, Run] = {}  # written by the render thread only
        # Raised after the entries change (read before them by a render: never ahead of them).
        self._sequence = 0
        self._served = 0

    def listen(self, listener: Callable[[StoreKey, Fragment], None]) -> None:
        """Call ``listener(key, fragment)`` on every publish (on the publisher's thread; it
        must be quick and must not raise)."""
        self._listeners.append(listener)

    # -- writers -----------------------------------------------------------------------------
    def publish(self, key: StoreKey, fragment: Fragment, max_age: float | None = None) -> None:
        entries = dict(self._entries)
        entries[key] = _Entry(fragment, self._clock.time(), max_age)
        self._entries = MappingProxyType(entries)
        self._sequence += 1
        self._dirty.set()
        for listener in self._listeners:
            listener(key, fragment)

    def replace(self, key: StoreKey, fragment: Fragment) -> bool:
        """Put ``fragment`` in place of ``key``'s, keeping its publication time and max age
        (the same figures, built anew: a reload changed the selection); listeners are not
        called. False, and nothing changes, when ``key`` has no fragment."""
        entry = self._entries.get(key)
        if entry is None:
            return False
        entries = dict(self._entries)
        entries[key] = _Entry(fragment, entry.published_at, entry.max_age)
        self._entries = MappingProxyType(entries)
        self._sequence += 1
        self._dirty.set()
        return True

    def drop(self, key: StoreKey) -> None:
        if key in self._entries:
            entries = dict(self._entries)
            del entries[key]
            self._entries = MappingProxyType(entries)
            self._dirty.set()

    def drop_account(self, account: str) -> None:
        """Drop the fragments of every area of ``account`` (it left this replica)."""
        kept = {k: v for k, v in self._entries.items() if k.account != account}
        if len(kept) != len(self._entries):
            self._entries = MappingProxyType(kept)
            self._dirty.set()

    # -- readers -----------------------------------------------------------------------------
    @property
    def exposition(self) -> Exposition:
        return self._exposition

    @property
    def sequence(self) -> int:
        """How many times a fragment was published or replaced: the sequence of the last."""
        return self._sequence

    @property
    def served(self) -> int:
        """The highest ``sequence`` a scrape was answered with (0: never scraped)."""
        return self._served

    def mark_served(self, exposition: Exposition) -> None:
        """A scrape was answered with ``exposition`` (by ``/metrics``)."""
        self._served = max(self._served, exposition.upto)

    def fragment(self, key: StoreKey, include_stale: bool = False) -> Fragment | None:
        entry = self._entries.get(key)
        if entry is None or not (include_stale or entry.fresh(self._clock.time())):
            return None
        return entry.fragment

    def keys(self) -> list[StoreKey]:
        """Every published key, stale ones included, sorted."""
        return sorted(self._entries)

    # -- rendering ---------------------------------------------------------------------------
    def render_sync(self) -> Exposition:
        """Render every fresh fragment plus the extra (self-metrics) text; thread-safe.

        Fragments are rendered and compressed once (``Fragment.packed``) and HELP/TYPE headers
        once per spec; a render joins compressed pieces and compresses only the extra text.
        """
        now = self._clock.time()
        upto = self._sequence  # first: the entries read next are at least this new
        entries = self._entries
        fresh = [(k, entries[k].fragment) for k in sorted(entries) if entries[k].fresh(now)]
        families: dict[str, tuple[MetricSpec, list[Run]]] = {}
        runs: dict[int, Run] = {}  # this render's, by the id of their pieces' tuple
        series = 0
        # A family left out since its fragment was built (a reload changed the selection) is
        # not shown, whichever area built it; the next poll does not build it at all.
        selection = self.selection
        wants = None if selection.everything else selection.wants
        for key, frag in fresh:
            packed = frag.packed(self._rendered.get(key))
            if wants is None:
                series += frag.series_count()
            for spec, body in packed.items():
                if wants is not None:
                    if not wants(spec.name):
                        continue
                    series += len(frag.samples[spec])
                run = self._runs.get(id(body))
                if run is None or run.pieces is not body:
                    run = Run.of(body)
                runs[id(body)] = run
                slot = families.get(spec.name)
                if slot is None:
                    families[spec.name] = (spec, [run])
                else:
                    if slot[0] != spec:
                        raise ValueError(f"metric {spec.name} declared twice with different specs")
                    slot[1].append(run)
        # what the next render packs a key's new fragment against (unchanged chunks kept)
        self._rendered = dict(fresh)
        # a family's pieces whose CRCs the next render need not combine again
        self._runs = runs
        text: list[Piece | Run] = []
        openmetrics: list[Piece | Run] = []
        for spec, bodies in families.values():
            text.append(self._header(spec, "text"))
            text.extend(bodies)
            openmetrics.append(self._header(spec, "openmetrics"))
            openmetrics.extend(bodies)
        if self._extra is not None:
            text.append(deflate(self._extra(), EXTRA_LEVEL))
        if self._extra_openmetrics is not None:
            openmetrics.append(deflate(self._extra_openmetrics(), EXTRA_LEVEL))
        openmetrics.append(_OPENMETRICS_EOF)
        return Exposition(gzip_join(text), now, series, gzip_join(openmetrics), upto)

    def _header(self, spec: MetricSpec, fmt: Format) -> Piece:
        piece = self._headers.get((spec, fmt))
        if piece is None:
            noted = MetricSpec(spec.name, spec.type, spec.help + BACKGROUND_NOTE, spec.labels)
            piece = self._headers[(spec, fmt)] = deflate(noted.header(fmt))
        return piece

    async def render(self) -> Exposition:
        """Render on the refresh thread (``support.offloop``) and swap the result in."""
        async with self._render_lock:
            self._dirty.clear()
            exposition = await off_loop(self.render_sync)
            self._exposition = exposition
            return exposition

    async def run_renderer(self, idle_seconds: float = 5.0, settle_seconds: float = 0.2) -> None:
        """Background task: render after changes (debounced) and every ``idle_seconds`` anyway,
        so self-metrics stay fresh and aged-out fragments disappear."""
        while True:
            changed = True
            try:
                await asyncio.wait_for(self._dirty.wait(), timeout=idle_seconds)
                await asyncio.sleep(settle_seconds)
            except TimeoutError:
                changed = False
            try:
                exposition = await self.render()
                # a poll's replies and the fragments replaced are freed by now
                await off_loop(self._after_render, changed, exposition)
            except Exception as exc:  # keep serving the last good body; never stop rendering
                log.error("render_failed", error=f"{type(exc).__name__}: {exc}")
                await asyncio.sleep(idle_seconds)
