"""Polls talking-head configurations (quota, catalogue) per account, sparingly."""

from __future__ import annotations

from types import MappingProxyType
from typing import Protocol

import structlog
from structlog.contextvars import bound_contextvars

from exporter.exposition import Store, StoreKey
from exporter.support.clock import Clock
from exporter.talking_head.reply import ThConfigurations
from exporter.talking_head.settings import SECONDS_PER_MONTH, TalkingHeadSettings
from exporter.talking_head.transform import configurations_fragment

log = structlog.get_logger("exporter.talking_head")

STALE_AFTER_INTERVALS = 5


class TalkingHeadClient(Protocol):
    """What the talking-head poller reads (``reply.TalkingHeadReader`` sends it)."""

    async def th_configurations(self, account: str) -> ThConfigurations: ...


def store_key(account: str) -> StoreKey:
    return StoreKey("talking_head", account)


def requests_per_month(interval_seconds: float) -> float:
    """Configuration requests one account spends in a 30-day month at this interval."""
    return SECONDS_PER_MONTH / interval_seconds


class TalkingHeadPoller:
    """Talking-head quota and catalogue metrics, one ``/configurations`` request per poll.

    The platform allows 1500 talking-head requests a month per account, so the default
    interval is 6 hours (120 requests a month). The parsed reply is kept so the admin surface
    can validate generate requests without spending another request.
    """

    def __init__(
        self,
        client: TalkingHeadClient,
        store: Store,
        clock: Clock,
        settings: TalkingHeadSettings,
    ) -> None:
        self._client = client
        self._store = store
        self._clock = clock
        self._settings = settings
        self._latest: MappingProxyType[str, tuple[float, ThConfigurations]] = MappingProxyType({})

    async def poll(self, account: str) -> None:
        conf = await self._client.th_configurations(account)
        now = self._clock.time()
        latest = dict(self._latest)
        latest[account] = (now, conf)
        self._latest = MappingProxyType(latest)
        with bound_contextvars(account=account):  # the poll's own lines (see support.logs)
            self._store.publish(
                store_key(account),
                configurations_fragment(account, conf, self._store.selection),
                max_age=STALE_AFTER_INTERVALS * self._settings.interval_seconds,
            )
            log.debug("talking_head_polled", quota_left=conf.quota_left, voices=len(conf.voices))

    def forget(self, account: str) -> None:
        """Drop the configurations kept of ``account`` (it left this replica)."""
        if account in self._latest:
            latest = dict(self._latest)
            del latest[account]
            self._latest = MappingProxyType(latest)

    def latest_configurations(self, account: str) -> ThConfigurations | None:
        """The last configurations reply of the account (None before the first success)."""
        found = self._latest.get(account)
        return None if found is None else found[1]

    def fetched_at(self, account: str) -> float | None:
        """Unix time of the last successful configurations read of the account."""
        found = self._latest.get(account)
        return None if found is None else found[0]
