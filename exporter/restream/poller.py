"""Polls restream resources, status and status history per account and publishes fragments."""

from __future__ import annotations

import asyncio
from typing import Protocol

import structlog

from exporter.clock import Clock
from exporter.config import RestreamSettings
from exporter.exposition import Store
from exporter.logs import Redactor
from exporter.restream.identity import (
    KeyFingerprint,
    TargetId,
    history_secrets,
    resource_secrets,
    status_secrets,
    utc_text,
)
from exporter.restream.transform import Change, fold_history, history_fragment, status_fragment
from exporter.upstream.auth import StaticToken
from exporter.upstream.models import HistoryPoint, RestreamResource, StatusRecord

log = structlog.get_logger("exporter.restream")

STALE_AFTER_INTERVALS = 5
# The first history read of an account looks back this far.
FIRST_HISTORY_LOOKBACK_SECONDS = 86400.0
# Later reads start this long before the end of the previous read (late or boundary points).
HISTORY_OVERLAP_SECONDS = 60.0


class RestreamClient(Protocol):
    """The part of UpstreamClient the restream poller needs."""

    async def restream_resources(self, account: str) -> list[RestreamResource]: ...

    async def restream_status(
        self, account: str, resource_id: str | None = None
    ) -> list[StatusRecord]: ...

    async def restream_history(
        self, account: str, resource_id: str, start: str, end: str
    ) -> list[HistoryPoint]: ...


def status_key(account: str) -> str:
    return f"restream/{account}"


def history_key(account: str) -> str:
    return f"restream_history/{account}"


class RestreamPoller:
    """Restream metrics of every account.

    ``poll`` sends one ``/resources`` and one ``/status`` request and publishes
    ``restream/<account>``; ``poll_history`` reads ``/history`` of each resource since the
    previous read (the last 24 hours at first) and publishes ``restream_history/<account>``.
    A failed poll raises and publishes nothing: the last fragment stays until it is
    ``5 x interval`` old. Every secret seen in a reply is taught to the log redactor first.

    ``fingerprint_secret`` keys the ``target_key`` fingerprint. When it is None and the client
    uses a static upstream token, a secret is derived from that token (fingerprints then change
    when the token is rotated); otherwise the fingerprint is an unkeyed, salted hash.
    """

    def __init__(
        self,
        client: RestreamClient,
        store: Store,
        clock: Clock,
        settings: RestreamSettings,
        redactor: Redactor,
        fingerprint_secret: str | bytes | None = None,
    ) -> None:
        self._client = client
        self._store = store
        self._clock = clock
        self._settings = settings
        self._redactor = redactor
        self._secret = (
            fingerprint_secret.encode()
            if isinstance(fingerprint_secret, str)
            else fingerprint_secret
        )
        self._fingerprint: KeyFingerprint | None = None
        self._resource_ids: dict[str, tuple[str, ...]] = {}
        self._changes: dict[str, dict[TargetId, Change]] = {}
        self._history_end: dict[str, float] = {}

    async def fingerprint(self) -> KeyFingerprint:
        """The target_key fingerprint in use (built on first use)."""
        if self._fingerprint is None:
            secret = self._secret
            if secret is None:
                auth = getattr(self._client, "auth", None)
                secret = (await auth.token()).encode() if isinstance(auth, StaticToken) else b""
            self._fingerprint = KeyFingerprint(secret)
        return self._fingerprint

    async def poll(self, account: str) -> None:
        fingerprint = await self.fingerprint()
        resources, statuses = await asyncio.gather(
            self._client.restream_resources(account), self._client.restream_status(account)
        )
        self._redactor.learn(*resource_secrets(resources), *status_secrets(statuses))
        # ~100 us per resource of pure work (URL cleaning, fingerprints, schedules): in a
        # worker thread, so a few hundred resources do not hold the event loop at once.
        fragment, duplicates = await asyncio.to_thread(
            status_fragment, account, resources, statuses, self._clock.time(), fingerprint
        )
        if duplicates:
            log.warning("restream_duplicate_series", account=account, dropped=duplicates)
        self._resource_ids[account] = tuple(r.resource_id for r in resources)
        self._store.publish(
            status_key(account),
            fragment,
            max_age=STALE_AFTER_INTERVALS * self._settings.interval_seconds,
        )
        log.debug(
            "restream_polled",
            account=account,
            resources=len(resources),
            targets=sum(len(s.targets) for s in statuses),
        )

    async def poll_history(self, account: str) -> None:
        fingerprint = await self.fingerprint()
        ids = self._resource_ids.get(account)
        if ids is None:  # history before the first status poll: learn the resources ourselves
            resources = await self._client.restream_resources(account)
            self._redactor.learn(*resource_secrets(resources))
            ids = tuple(r.resource_id for r in resources)
        now = self._clock.time()
        previous_end = self._history_end.get(account)
        start = (
            now - FIRST_HISTORY_LOOKBACK_SECONDS
            if previous_end is None
            else previous_end - HISTORY_OVERLAP_SECONDS
        )
        start_text, end_text = utc_text(start), utc_text(now)
        try:
            async with asyncio.TaskGroup() as group:
                tasks = [
                    group.create_task(
                        self._client.restream_history(account, rid, start_text, end_text)
                    )
                    for rid in ids
                ]
        except ExceptionGroup as group_error:  # report the upstream error itself
            raise group_error.exceptions[0] from None
        known = set(ids)
        state = {t: c for t, c in self._changes.get(account, {}).items() if t[0] in known}
        for rid, task in zip(ids, tasks, strict=True):
            points = task.result()
            self._redactor.learn(*history_secrets(points))
            state = fold_history(state, rid, points, fingerprint)
        self._changes[account] = state
        self._history_end[account] = now
        self._store.publish(
            history_key(account),
            history_fragment(account, state),
            max_age=STALE_AFTER_INTERVALS * self._settings.history_interval_seconds,
        )
        log.debug(
            "restream_history_polled", account=account, resources=len(ids), targets=len(state)
        )
