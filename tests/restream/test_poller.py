"""Unit tests of RestreamPoller with a fake client: requests sent, history windows, failures."""

from __future__ import annotations

import pytest

from exporter.exposition import Store, StoreKey
from exporter.restream import KeyFingerprint, RestreamPoller
from exporter.restream import families as f
from exporter.restream.poller import HISTORY_ROUND_ROBIN_POLLS
from exporter.restream.reply import (
    HistoryPoint,
    RestreamEntry,
    RestreamResource,
    StatusRecord,
    TargetStatus,
)
from exporter.restream.settings import RestreamSettings
from exporter.support.clock import FakeClock
from exporter.support.logs import Redactor
from exporter.upstream import UpstreamError
from exporter.upstream.auth import StaticToken

NOW = 1_767_225_600.0
SRC = "rtmp://in.example/live/a"
URL = "rtmp://yt.example/live2"


class FakeRestream:
    def __init__(self) -> None:
        self.auth = StaticToken("static-upstream-token")
        self.resources = [
            RestreamResource(
                "r1", "A", "short", True, (RestreamEntry(SRC, URL, "key-one-1234", password="pw1"),)
            ),
            RestreamResource("r2", "B", "short", True, (RestreamEntry(SRC, URL, "key-two-5678"),)),
        ]
        self.status = [StatusRecord("r1", (TargetStatus(SRC, URL, "key-one-1234", 0, "OK"),))]
        self.points: dict[str, list[HistoryPoint]] = {}
        self.calls: list[tuple[str, ...]] = []
        self.fail_history: set[str] = set()

    async def restream_resources(self, account: str) -> list[RestreamResource]:
        self.calls.append(("resources", account))
        return self.resources

    async def restream_status(
        self, account: str, resource_id: str | None = None
    ) -> list[StatusRecord]:
        self.calls.append(("status", account))
        return self.status

    async def restream_history(
        self, account: str, resource_id: str, start: str, end: str
    ) -> list[HistoryPoint]:
        self.calls.append(("history", account, resource_id, start, end))
        if resource_id in self.fail_history:
            raise UpstreamError("restream", "http", "Service unavailable", 503)
        return self.points.get(resource_id, [])


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(NOW)


def make(fake: FakeRestream, clock: FakeClock, secret: str | None = "s") -> RestreamPoller:
    return RestreamPoller(
        fake, Store(clock), clock, RestreamSettings(), Redactor(), fingerprint_secret=secret
    )


async def test_poll_sends_one_resources_and_one_status_request(clock: FakeClock) -> None:
    fake = FakeRestream()
    store, redactor = Store(clock), Redactor()
    poller = RestreamPoller(fake, store, clock, RestreamSettings(), redactor, "s")
    await poller.poll("acme")
    assert sorted(fake.calls) == [("resources", "acme"), ("status", "acme")]
    frag = store.fragment(StoreKey("restream", "acme"))
    assert frag is not None
    assert frag.value(f.UP, resource_id="r1", target_key=KeyFingerprint(b"s")("key-one-1234")) == 1
    assert redactor.text("x key-one-1234 pw1 key-two-5678") == "x ******** ******** ********"


def test_fingerprint_is_keyed_by_the_secret_it_is_given(clock: FakeClock) -> None:
    fake = FakeRestream()
    keyed = make(fake, clock, secret="static-upstream-token").fingerprint
    assert keyed.keyed
    assert keyed("k" * 20) == KeyFingerprint(b"static-upstream-token")("k" * 20)
    assert make(fake, clock, secret="other").fingerprint("k" * 20) != keyed("k" * 20)
    unkeyed = make(fake, clock, secret=None).fingerprint
    assert not unkeyed.keyed
    assert unkeyed("k" * 20) != keyed("k" * 20)


async def test_first_history_read_looks_back_a_day_then_since_the_last_read(
    clock: FakeClock,
) -> None:
    fake = FakeRestream()
    poller = make(fake, clock)
    await poller.poll("acme")
    await poller.poll_history("acme")
    hist = [c for c in fake.calls if c[0] == "history"]
    assert sorted(c[2] for c in hist) == ["r1", "r2"]
    assert {c[3:] for c in hist} == {("2025-12-31T00:00:00Z", "2026-01-01T00:00:00Z")}
    fake.calls.clear()
    clock.advance(300)
    fake.status = [StatusRecord("r1", (TargetStatus(SRC, URL, "key-one-1234", 3, "down"),))]
    await poller.poll("acme")  # r1 changed: its history is read again
    await poller.poll_history("acme")
    hist = [c for c in fake.calls if c[0] == "history"]
    assert [c[2:] for c in hist] == [("r1", "2025-12-31T23:59:00Z", "2026-01-01T00:05:00Z")]


async def test_history_before_any_status_poll_lists_resources_itself(clock: FakeClock) -> None:
    fake = FakeRestream()
    await make(fake, clock).poll_history("acme")
    assert fake.calls[0] == ("resources", "acme")
    assert len([c for c in fake.calls if c[0] == "history"]) == 2


async def test_history_publishes_the_latest_change_and_forgets_removed_resources(
    clock: FakeClock,
) -> None:
    fake = FakeRestream()
    store = Store(clock)
    poller = RestreamPoller(fake, store, clock, RestreamSettings(), Redactor(), "s")
    fake.points["r1"] = [HistoryPoint(SRC, URL, "key-one-1234", 2, "x", NOW - 60)]
    fake.points["r2"] = [HistoryPoint(SRC, URL, "key-two-5678", 0, "OK", NOW - 30)]
    await poller.poll("acme")
    await poller.poll_history("acme")
    frag = store.fragment(StoreKey("restream_history", "acme"))
    assert frag is not None
    assert frag.value(f.STATUS_CHANGED, resource_id="r1") == NOW - 60
    assert frag.value(f.STATUS_CHANGED, resource_id="r2") == NOW - 30
    fake.resources = fake.resources[:1]
    await poller.poll("acme")
    clock.advance(300)
    await poller.poll_history("acme")
    frag = store.fragment(StoreKey("restream_history", "acme"))
    assert frag is not None
    assert frag.value(f.STATUS_CHANGED, resource_id="r1") == NOW - 60
    assert frag.value(f.STATUS_CHANGED, resource_id="r2") is None


async def test_failed_history_read_publishes_nothing_and_rereads_the_window(
    clock: FakeClock,
) -> None:
    fake = FakeRestream()
    store = Store(clock)
    poller = RestreamPoller(fake, store, clock, RestreamSettings(), Redactor(), "s")
    await poller.poll("acme")
    fake.fail_history = {"r2"}
    with pytest.raises(UpstreamError, match="Service unavailable"):
        await poller.poll_history("acme")
    assert store.fragment(StoreKey("restream_history", "acme")) is None
    fake.fail_history = set()
    fake.calls.clear()
    clock.advance(300)
    await poller.poll_history("acme")
    assert {c[3] for c in fake.calls} == {"2025-12-31T00:05:00Z"}  # still the first 24 h read


async def test_failed_status_poll_keeps_the_last_fragment_for_five_intervals(
    clock: FakeClock,
) -> None:
    fake = FakeRestream()
    store = Store(clock)
    poller = RestreamPoller(fake, store, clock, RestreamSettings(interval_seconds=30), Redactor())

    async def broken(account: str, resource_id: str | None = None) -> list[StatusRecord]:
        raise UpstreamError("restream", "timeout", "GET /status timed out")

    await poller.poll("acme")
    fake.restream_status = broken  # type: ignore[method-assign]
    clock.advance(30)
    with pytest.raises(UpstreamError):
        await poller.poll("acme")
    clock.advance(120)
    assert store.fragment(StoreKey("restream", "acme")) is not None
    clock.advance(1)
    assert store.fragment(StoreKey("restream", "acme")) is None


def many(fake: FakeRestream, n: int) -> None:
    """``n`` resources r00.. with one target each, all reported up."""
    fake.resources = [
        RestreamResource(f"r{i:02d}", "", "short", True, (RestreamEntry(SRC, URL, f"k{i:02d}"),))
        for i in range(n)
    ]
    fake.status = [
        StatusRecord(f"r{i:02d}", (TargetStatus(SRC, URL, f"k{i:02d}", 0, "OK"),)) for i in range(n)
    ]


def history_reads(fake: FakeRestream) -> list[str]:
    reads = [c[2] for c in fake.calls if c[0] == "history"]
    fake.calls.clear()
    return reads


async def test_history_is_read_where_the_status_changed_plus_a_round_robin_share(
    clock: FakeClock,
) -> None:
    fake = FakeRestream()
    many(fake, 24)
    poller = make(fake, clock)
    await poller.poll("acme")
    await poller.poll_history("acme")
    assert len(history_reads(fake)) == 24  # everything once, the last 24 hours
    seen: set[str] = set()
    for n in range(HISTORY_ROUND_ROBIN_POLLS):
        clock.advance(300)
        if n == 3:  # r20 went down between two history polls
            fake.status[20] = StatusRecord("r20", (TargetStatus(SRC, URL, "k20", 3, "x"),))
        await poller.poll("acme")
        await poller.poll_history("acme")
        reads = history_reads(fake)
        if n == 3:
            assert reads[0] == "r20"
            assert len(reads) == 1 + 1  # the changed one, and 23/12 of the others
        else:
            assert len(reads) == 2  # 24 / 12, not 24
        seen.update(reads)
    assert seen == {f"r{i:02d}" for i in range(24)}  # each re-read within 12 polls


async def test_history_read_starts_where_that_resource_was_last_read(clock: FakeClock) -> None:
    fake = FakeRestream()
    many(fake, 24)
    poller = make(fake, clock)
    await poller.poll("acme")
    await poller.poll_history("acme")
    fake.calls.clear()
    clock.advance(600)
    fake.status[7] = StatusRecord("r07", (TargetStatus(SRC, URL, "k07", 2, "x"),))
    await poller.poll("acme")
    fake.calls.clear()
    await poller.poll_history("acme")
    changed = [c for c in fake.calls if c[0] == "history" and c[2] == "r07"]
    assert [c[3:] for c in changed] == [("2025-12-31T23:59:00Z", "2026-01-01T00:10:00Z")]


async def test_first_history_reads_are_spread_over_the_slices(clock: FakeClock) -> None:
    fake = FakeRestream()
    many(fake, 24)
    poller = RestreamPoller(
        fake, Store(clock), clock, RestreamSettings(), Redactor(), "s", slices=6
    )
    await poller.poll("acme")
    counts = []
    for _ in range(6):
        await poller.poll_history("acme")
        counts.append(len(history_reads(fake)))
        clock.advance(50)
    assert counts == [4, 4, 4, 4, 4, 4]  # a sixth of the new resources per run


async def test_one_state_object_per_account_holds_all_it_keeps_and_forget_drops_it(
    clock: FakeClock,
) -> None:
    fake = FakeRestream()
    poller = make(fake, clock)
    await poller.poll("acme")
    await poller.poll("beta")
    clock.advance(60)
    await poller.poll_history("acme")
    acme, beta = poller.state("acme"), poller.state("beta")
    assert acme is not None
    assert beta is not None
    assert acme.resource_ids == ("r1", "r2")
    assert set(acme.status_sig) == {"r1"}
    assert acme.read_end == {"r1": NOW + 60, "r2": NOW + 60}
    assert set(acme.read_sig) == {"r1", "r2"}
    assert acme.runs == 1
    assert (beta.read_end, beta.runs) == ({}, 0)  # history of acme only
    poller.forget("acme")
    assert poller.state("acme") is None
    assert not poller.knows("acme")
    assert poller.state("beta") is beta
    assert poller.knows("beta")
