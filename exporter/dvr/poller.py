"""Polls the configured DVR streams of each account and publishes one fragment per account."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Protocol

import structlog
from structlog.contextvars import bound_contextvars

from exporter.dvr.reply import DvrNode
from exporter.dvr.settings import DvrSettings
from exporter.dvr.transform import dvr_fragment
from exporter.exposition import Store, StoreKey
from exporter.support.clock import Clock
from exporter.support.collector import untrack
from exporter.support.offloop import off_loop
from exporter.upstream.budget import Postponed

log = structlog.get_logger("exporter.dvr")

STALE_AFTER_INTERVALS = 5


class DvrClient(Protocol):
    """What the DVR poller reads (``reply.DvrReader`` sends it)."""

    async def dvr_stream(self, account: str, stream: str) -> list[DvrNode]: ...


class DvrStreamsFailed(Exception):
    """Some (not all) streams of an account could not be read; the others were published."""


def store_key(account: str) -> StoreKey:
    return StoreKey("dvr", account)


class DvrPoller:
    """DVR metrics of the configured streams (``streams``: account -> stream names).

    ``poll`` sends one request per stream, all at once (the client caps concurrency). When
    every stream fails it raises and publishes nothing, so the last fragment stays until it
    is ``5 x interval`` old. When only some fail, the fresh streams are published together with
    the last good reply of each failed stream (kept while it is under ``5 x interval`` old),
    and then the poll raises ``DvrStreamsFailed`` so ``cdnvideo_up`` shows the failure: one
    misconfigured stream name does not blank the account's other streams.

    With ``slices`` > 1 the poll runs that many times per interval and each run reads every
    ``slices``-th stream in turn (the others keep their last reply), so each stream is still
    read once per interval but the requests are spread over it; ``dvr.poll_slices`` multiplies
    the slices without more runs, so a stream is read once in that many intervals (and its
    last reply is kept that much longer). A read the request budget
    postpones keeps its last reply too; the poll then raises Postponed after publishing.
    """

    def __init__(
        self,
        client: DvrClient,
        store: Store,
        clock: Clock,
        settings: DvrSettings,
        streams: Mapping[str, tuple[str, ...]],
        slices: int = 1,
    ) -> None:
        self._client = client
        self._store = store
        self._clock = clock
        self._settings = settings
        self._streams = {account: tuple(dict.fromkeys(s)) for account, s in streams.items()}
        self._last: dict[str, dict[str, tuple[float, tuple[DvrNode, ...]]]] = {}
        self._slices = max(1, slices)
        self._turn: dict[str, int] = {}

    def set_streams(self, streams: Mapping[str, tuple[str, ...]]) -> None:
        """The configured streams of each account, replaced whole (a config reload)."""
        self._streams = {account: tuple(dict.fromkeys(s)) for account, s in streams.items()}

    def forget(self, account: str) -> None:
        """Drop the replies and turn kept of ``account`` (it left this replica); its configured
        streams stay (they are configuration)."""
        self._last.pop(account, None)
        self._turn.pop(account, None)

    def knows(self, account: str) -> bool:
        """Whether replies or a turn of ``account`` are kept (diagnostics and tests)."""
        return account in self._last or account in self._turn

    @property
    def max_age(self) -> float:
        s = self._settings
        return STALE_AFTER_INTERVALS * s.interval_seconds * s.poll_slices

    def streams(self, account: str) -> tuple[str, ...]:
        return self._streams.get(account, ())

    def due(self, account: str) -> tuple[str, ...]:
        """The streams the next poll of ``account`` reads."""
        streams = self.streams(account)
        if self._slices == 1:
            return streams
        turn = self._turn.get(account, 0) % self._slices
        return tuple(s for i, s in enumerate(streams) if i % self._slices == turn)

    async def poll(self, account: str) -> None:
        streams = self.due(account)
        self._turn[account] = self._turn.get(account, 0) + 1
        replies = await asyncio.gather(
            *(self._client.dvr_stream(account, s) for s in streams), return_exceptions=True
        )
        now = self._clock.time()
        previous = self._last.get(account, {})
        configured, read = set(self.streams(account)), set(streams)  # every stream looked up
        current: dict[str, tuple[float, tuple[DvrNode, ...]]] = {
            s: kept
            for s, kept in previous.items()
            if s in configured and s not in read and now - kept[0] <= self.max_age
        }
        failures: list[tuple[str, Exception]] = []
        postponed: list[Postponed] = []
        for stream, reply in zip(streams, replies, strict=True):
            if isinstance(reply, list):
                nodes = tuple(reply)  # untracked nodes (parse_dvr_stream): so are the tuples
                current[stream] = entry = (now, nodes)
                untrack(nodes, entry)
                continue
            if not isinstance(reply, Exception):  # cancellation and the like
                raise reply
            if isinstance(reply, Postponed):
                postponed.append(reply)
            else:
                failures.append((stream, reply))
            kept = previous.get(stream)
            if kept is not None and now - kept[0] <= self.max_age:
                current[stream] = kept
        if streams and len(failures) == len(streams):
            raise failures[0][1]
        if streams and len(postponed) == len(streams):
            raise postponed[0]
        self._last[account] = current
        by_stream = {s: nodes for s, (_, nodes) in current.items()}
        with bound_contextvars(account=account):  # the poll's own lines (see support.logs)
            # built on the refresh thread, not on the event loop
            # (docs/performance.md#full-collections-deferred-the-dvr-fragment-off-the-loop)
            fragment = await off_loop(dvr_fragment, account, by_stream, self._store.selection)
            self._store.publish(store_key(account), fragment, max_age=self.max_age)
            log.debug("dvr_polled", streams=len(streams), failed=len(failures))
        if failures:
            detail = "; ".join(f"{s}: {type(e).__name__}: {e}" for s, e in failures)
            raise DvrStreamsFailed(
                f"{len(failures)} of {len(streams)} DVR streams failed: {detail}"
            )
        if postponed:
            raise postponed[0]
