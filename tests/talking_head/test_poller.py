"""Unit tests of the talking-head transform and poller (a fake client, FakeClock)."""

from __future__ import annotations

import pytest

from exporter.exposition import Store, StoreKey
from exporter.support.clock import FakeClock
from exporter.talking_head import TalkingHeadPoller, configurations_fragment, requests_per_month
from exporter.talking_head import families as t
from exporter.talking_head.reply import ThConfigurations
from exporter.talking_head.settings import TalkingHeadSettings
from exporter.upstream import UpstreamError

NOW = 1_767_225_600.0


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(NOW)


CONF = ThConfigurations(
    voices={"Alena": {}, "Filipp": {}, "Jane": {}},
    models={"Natalia": {"1.0.0": {}, "1.1.0": {}}, "Ivan": {"2.0.0": {}}},
    backgrounds={"green_screen": {}},
    quota_limit=100,
    quota_left=87.5,
    watermark=True,
)


def test_talking_head_values() -> None:
    frag = configurations_fragment("acme", CONF)
    assert frag.value(t.QUOTA_LIMIT, account="acme") == 100
    assert frag.value(t.QUOTA_LEFT, account="acme") == 87.5
    assert frag.value(t.WATERMARK, account="acme") == 1
    assert frag.value(t.VOICES, account="acme") == 3
    assert frag.value(t.MODELS, account="acme") == 3


def test_talking_head_default_interval_spends_eight_percent() -> None:
    assert requests_per_month(TalkingHeadSettings().interval_seconds) == 120
    assert requests_per_month(21600) / 1500 == 0.08


class FakeTh:
    def __init__(self) -> None:
        self.calls = 0
        self.fail = False

    async def th_configurations(self, account: str) -> ThConfigurations:
        self.calls += 1
        if self.fail:
            raise UpstreamError("talking_head", "http", "Service unavailable", 503)
        return CONF


async def test_talking_head_poll_caches_the_reply_and_publishes(clock: FakeClock) -> None:
    fake, store = FakeTh(), Store(clock)
    poller = TalkingHeadPoller(fake, store, clock, TalkingHeadSettings())
    assert poller.latest_configurations("acme") is None
    await poller.poll("acme")
    assert fake.calls == 1
    assert poller.latest_configurations("acme") is CONF
    assert poller.fetched_at("acme") == NOW
    assert store.fragment(StoreKey("talking_head", "acme")) is not None
    fake.fail = True
    clock.advance(21600)
    with pytest.raises(UpstreamError):
        await poller.poll("acme")
    assert poller.latest_configurations("acme") is CONF
    clock.advance(4 * 21600)
    assert store.fragment(StoreKey("talking_head", "acme")) is not None
    clock.advance(1)
    assert store.fragment(StoreKey("talking_head", "acme")) is None
