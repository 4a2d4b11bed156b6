"""Unit tests of the DVR transform and poller (a fake client, FakeClock)."""

from __future__ import annotations

import pytest

from exporter.dvr import DvrPoller, DvrStreamsFailed, dvr_fragment
from exporter.dvr import families as d
from exporter.dvr.reply import DvrNode, DvrRange
from exporter.dvr.settings import DvrSettings
from exporter.exposition import Store, StoreKey
from exporter.support.clock import FakeClock
from exporter.upstream import UpstreamError
from exporter.upstream.budget import Postponed

NOW = 1_767_225_600.0


def node(host: str, alive: bool = True, ranges: tuple[DvrRange, ...] = ()) -> DvrNode:
    first = ranges[0].start if ranges else 0
    total = sum(r.duration for r in ranges)
    return DvrNode("live/main", host, alive, True, 7200, total, first, ranges)


RANGES = (DvrRange(NOW - 7200, 3000), DvrRange(NOW - 3600, 3500))


def test_dvr_values_per_stream_and_node() -> None:
    frag = dvr_fragment("acme", {"live/main": [node("n1", ranges=RANGES), node("n2", False)]})
    n1 = {"account": "acme", "stream": "live/main", "host": "n1"}
    assert frag.value(d.ALIVE, **n1) == 1
    assert frag.value(d.ENABLED, **n1) == 1
    assert frag.value(d.WINDOW, **n1) == 7200
    assert frag.value(d.RECORDED, **n1) == 6500
    assert frag.value(d.RANGES, **n1) == 2
    assert frag.value(d.FIRST_RECORDING, **n1) == NOW - 7200
    assert frag.value(d.LAST_RECORDING_END, **n1) == NOW - 100
    n2 = {**n1, "host": "n2"}
    assert frag.value(d.ALIVE, **n2) == 0
    assert frag.value(d.RANGES, **n2) == 0
    # an empty archive has no timestamps rather than 1970
    assert frag.value(d.FIRST_RECORDING, **n2) is None
    assert frag.value(d.LAST_RECORDING_END, **n2) is None


def test_dvr_last_end_is_the_latest_end_not_the_last_listed() -> None:
    ranges = (DvrRange(NOW - 100, 50), DvrRange(NOW - 1000, 990))
    frag = dvr_fragment("acme", {"s": [node("n1", ranges=ranges)]})
    assert frag.value(d.LAST_RECORDING_END, host="n1") == NOW - 10


def test_dvr_duplicate_host_is_exported_once() -> None:
    frag = dvr_fragment("acme", {"s": [node("n1"), node("n1", alive=False)]})
    assert len(frag.samples[d.ALIVE]) == 1


class FakeDvr:
    def __init__(self) -> None:
        self.nodes: dict[str, list[DvrNode]] = {}
        self.failing: set[str] = set()
        self.calls: list[tuple[str, str]] = []

    async def dvr_stream(self, account: str, stream: str) -> list[DvrNode]:
        self.calls.append((account, stream))
        if stream in self.failing:
            raise UpstreamError("dvr", "http", "Not found", 404)
        return list(self.nodes.get(stream, []))


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(NOW)


async def test_dvr_poll_asks_each_stream_once_and_publishes(clock: FakeClock) -> None:
    fake, store = FakeDvr(), Store(clock)
    fake.nodes = {"live/main": [node("n1"), node("n2")], "news": [node("n3")]}
    poller = DvrPoller(fake, store, clock, DvrSettings(), {"acme": ("live/main", "news")})
    await poller.poll("acme")
    assert sorted(fake.calls) == [("acme", "live/main"), ("acme", "news")]
    frag = store.fragment(StoreKey("dvr", "acme"))
    assert frag is not None
    assert frag.value(d.ALIVE, stream="news", host="n3") == 1
    fake.nodes["live/main"] = [node("n1")]
    await poller.poll("acme")
    frag = store.fragment(StoreKey("dvr", "acme"))
    assert frag is not None
    assert frag.value(d.ALIVE, stream="live/main", host="n2") is None


async def test_dvr_account_without_streams_sends_nothing(clock: FakeClock) -> None:
    fake, store = FakeDvr(), Store(clock)
    await DvrPoller(fake, store, clock, DvrSettings(), {}).poll("acme")
    assert fake.calls == []


async def test_dvr_all_streams_failing_raises_and_keeps_the_last_fragment(
    clock: FakeClock,
) -> None:
    fake, store = FakeDvr(), Store(clock)
    fake.nodes = {"s": [node("n1")]}
    poller = DvrPoller(fake, store, clock, DvrSettings(interval_seconds=60), {"acme": ("s",)})
    await poller.poll("acme")
    fake.failing = {"s"}
    clock.advance(60)
    with pytest.raises(UpstreamError):
        await poller.poll("acme")
    assert store.fragment(StoreKey("dvr", "acme")) is not None
    clock.advance(4 * 60)
    assert store.fragment(StoreKey("dvr", "acme")) is not None  # 5 intervals after the good poll
    clock.advance(1)
    assert store.fragment(StoreKey("dvr", "acme")) is None


async def test_dvr_one_failing_stream_keeps_its_last_values_and_publishes_the_rest(
    clock: FakeClock,
) -> None:
    fake, store = FakeDvr(), Store(clock)
    fake.nodes = {"a": [node("n1")], "b": [node("n2")]}
    poller = DvrPoller(fake, store, clock, DvrSettings(interval_seconds=60), {"acme": ("a", "b")})
    await poller.poll("acme")
    fake.failing = {"b"}
    fake.nodes["a"] = [node("n1", alive=False)]
    for _ in range(5):
        clock.advance(60)
        with pytest.raises(DvrStreamsFailed, match="1 of 2 DVR streams failed: b"):
            await poller.poll("acme")
        frag = store.fragment(StoreKey("dvr", "acme"))
        assert frag is not None
        assert frag.value(d.ALIVE, stream="a", host="n1") == 0
        assert frag.value(d.ALIVE, stream="b", host="n2") == 1
    clock.advance(60)
    with pytest.raises(DvrStreamsFailed):
        await poller.poll("acme")
    frag = store.fragment(StoreKey("dvr", "acme"))
    assert frag is not None
    assert frag.value(d.ALIVE, stream="b", host="n2") is None  # older than 5 intervals


async def test_dvr_slices_spread_the_streams_over_the_interval(clock: FakeClock) -> None:
    fake, store = FakeDvr(), Store(clock)
    streams = tuple(f"s{i}" for i in range(6))
    fake.nodes = {s: [node(f"n-{s}")] for s in streams}
    poller = DvrPoller(fake, store, clock, DvrSettings(interval_seconds=60), {"acme": streams}, 3)
    per_run = []
    for _ in range(3):
        await poller.poll("acme")
        per_run.append(sorted(s for _, s in fake.calls))
        fake.calls.clear()
        clock.advance(20)
    assert per_run == [["s0", "s3"], ["s1", "s4"], ["s2", "s5"]]
    frag = store.fragment(StoreKey("dvr", "acme"))
    assert frag is not None
    assert all(frag.value(d.ALIVE, stream=s, host=f"n-{s}") == 1 for s in streams)


async def test_dvr_postponed_reads_keep_their_values_and_fail_nothing(clock: FakeClock) -> None:
    class Budgeted(FakeDvr):
        async def dvr_stream(self, account: str, stream: str) -> list[DvrNode]:
            if stream in self.failing:
                raise Postponed("dvr", "budget", "request budget of 'acme': budget spent")
            return await super().dvr_stream(account, stream)

    fake, store = Budgeted(), Store(clock)
    fake.nodes = {"a": [node("n1")], "b": [node("n2")]}
    poller = DvrPoller(fake, store, clock, DvrSettings(interval_seconds=60), {"acme": ("a", "b")})
    await poller.poll("acme")
    fake.failing = {"b"}
    fake.nodes["a"] = [node("n1", alive=False)]
    clock.advance(60)
    with pytest.raises(Postponed):
        await poller.poll("acme")
    frag = store.fragment(StoreKey("dvr", "acme"))
    assert frag is not None
    assert frag.value(d.ALIVE, stream="a", host="n1") == 0  # fresh
    assert frag.value(d.ALIVE, stream="b", host="n2") == 1  # kept
