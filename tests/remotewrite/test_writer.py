"""The remote writer against a receiver over HTTP: each minute written once across a restart,
retries resend the same bytes, a 400 is split down to the bad series, permanent refusals are
dropped (counted, logged once), and no sample is sent from the future or past the window."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestServer
from structlog.testing import capture_logs

from exporter.remotewrite import writer as writer_module
from exporter.remotewrite.build import build_writer
from exporter.remotewrite.settings import RemoteWriteSettings
from exporter.remotewrite.store import MinuteStore
from exporter.remotewrite.writer import RemoteWriter
from exporter.runtime.selfmetrics import SelfMetrics
from exporter.support.clock import FakeClock
from tests.remotewrite.receiver import Receiver

M = 1_767_225_600  # a minute start
ACC = "acme"
ServerFactory = Callable[..., Awaitable[TestServer]]


class Rig:
    def __init__(self, url: str, session: aiohttp.ClientSession, state: str) -> None:
        self.clock = FakeClock(M + 300)
        self.metrics = SelfMetrics()
        self.settings = RemoteWriteSettings(url=url, bearer_token="rw-secret", max_age_minutes=60)
        self.session = session
        self.state = state

    def writer(self) -> RemoteWriter:
        """A writer as the daemon builds it (a restart: a new one on the same state file)."""
        return build_writer(
            self.settings, self.state, self.session, self.clock, self.metrics, lambda n: True
        )

    def sample(self, name: str, **labels: str) -> float | None:
        return self.metrics.registry.get_sample_value(name, labels)


@pytest.fixture
async def receiver_rig(
    aiohttp_server: ServerFactory, tmp_path: Path
) -> AsyncIterator[tuple[Receiver, Rig]]:
    receiver = Receiver()
    server = await aiohttp_server(receiver.app(), host="127.0.0.1", port=0)
    async with aiohttp.ClientSession() as session:
        url = str(server.make_url("/api/v1/write"))
        yield receiver, Rig(url, session, str(tmp_path / "traffic.json"))


def offer(w: RemoteWriter, minute: int, requests: float = 10.0, resources: int = 0) -> None:
    w.final(
        ACC,
        minute,
        minute + 60,
        {"edge_requests_total": requests},
        {str(100 + i): {"edge_requests_total": float(i)} for i in range(resources)},
    )


def occupy(path: str) -> None:
    """A file where the store's directory would go: every write of the store fails."""
    Path(path).write_text("not a directory", encoding="utf-8")


def stored(receiver: Receiver) -> dict[tuple[int, float], int]:
    """(timestamp, value) of the account's requests sample -> times stored."""
    out: dict[tuple[int, float], int] = {}
    for s in receiver.stored:
        if dict(s.labels)["__name__"] == "cdnvideo_minute_account_requests":
            key = (s.timestamp_ms, s.value)
            out[key] = out.get(key, 0) + 1
    return out


async def test_a_pending_minute_survives_a_restart_and_is_written_once(
    receiver_rig: tuple[Receiver, Rig],
) -> None:
    receiver, rig = receiver_rig
    receiver.answers = [(503, "down")]
    w = rig.writer()
    offer(w, M, 10.0)
    await w.flush()
    assert receiver.stored == []
    assert len(receiver.bodies) == 1
    assert rig.sample("cdnvideo_remote_write_pending_minutes", account=ACC) == 1
    assert rig.sample("cdnvideo_remote_write_samples_total", outcome="retried") == 1

    restarted = rig.writer()  # the process restarted: only the files are left
    rig.clock.advance(60)
    await restarted.flush()
    assert stored(receiver) == {(M * 1000, 10.0): 1}
    assert receiver.bodies[1] == receiver.bodies[0]  # the retry resent the same bytes
    assert receiver.headers[1]["Authorization"] == "Bearer rw-secret"
    assert receiver.headers[1]["Content-Encoding"] == "snappy"
    offer(restarted, M, 11.0)  # the traffic ledger settled it again before its state was saved
    await restarted.flush()
    again = rig.writer()
    offer(again, M, 12.0)
    await again.flush()
    assert stored(receiver) == {(M * 1000, 10.0): 1}
    assert len(receiver.bodies) == 2
    assert rig.sample("cdnvideo_remote_write_pending_minutes", account=ACC) == 0
    assert rig.sample("cdnvideo_remote_write_last_minute_timestamp_seconds", account=ACC) == M
    assert rig.sample("cdnvideo_remote_write_samples_total", outcome="sent") == 1


async def test_a_failed_account_waits_out_its_backoff(receiver_rig: tuple[Receiver, Rig]) -> None:
    receiver, rig = receiver_rig
    receiver.answers = [(503, "down")]
    w = rig.writer()
    offer(w, M)
    offer(w, M + 60)
    await w.flush()
    await w.flush()  # still backing off: nothing is sent
    assert len(receiver.bodies) == 1
    rig.clock.advance(5)
    await w.flush()
    assert sorted(stored(receiver)) == [(M * 1000, 10.0), ((M + 60) * 1000, 10.0)]
    assert receiver.bodies[1] == receiver.bodies[0]  # the retry resent the same bytes


async def test_the_oldest_pending_minutes_age_grows_until_it_is_written(
    receiver_rig: tuple[Receiver, Rig],
) -> None:
    receiver, rig = receiver_rig
    age = "cdnvideo_remote_write_oldest_pending_minute_age_seconds"
    receiver.answers = [(503, "down"), (503, "down")]
    w = rig.writer()
    assert rig.sample(age, account=ACC) is None  # no account known yet
    offer(w, M)
    offer(w, M + 60)
    await w.flush()
    assert rig.sample(age, account=ACC) == 300  # the clock is at M + 300
    rig.clock.advance(3)
    await w.flush()  # backing off: nothing sent, the minute still ages
    assert len(receiver.bodies) == 1
    assert rig.sample(age, account=ACC) == 303
    rig.clock.advance(1)
    rig.writer()  # a restart shows the pending minutes' age at once
    assert rig.sample(age, account=ACC) == 304
    rig.clock.advance(1)
    await w.flush()  # the backoff is over: tried again, refused again
    assert len(receiver.bodies) == 2
    assert rig.sample(age, account=ACC) == 305
    rig.clock.advance(10)
    await w.flush()
    assert sorted(stored(receiver)) == [(M * 1000, 10.0), ((M + 60) * 1000, 10.0)]
    assert rig.sample(age, account=ACC) == 0
    assert rig.sample("cdnvideo_remote_write_pending_minutes", account=ACC) == 0


async def test_a_400_is_split_down_to_the_bad_series_and_the_rest_is_written(
    receiver_rig: tuple[Receiver, Rig],
) -> None:
    receiver, rig = receiver_rig
    receiver.bad = lambda s: ("resource", "103") in s.labels
    w = rig.writer()
    with capture_logs() as logs:
        offer(w, M, 10.0, resources=6)
        offer(w, M + 60, 20.0, resources=6)
        await w.flush()
        await w.flush()
    written = {(dict(s.labels).get("resource"), s.timestamp_ms) for s in receiver.stored}
    for minute in (M, M + 60):
        want = {None} | {str(100 + i) for i in range(6) if i != 3}
        assert {r for r, ts in written if ts == minute * 1000} == want
    assert len(receiver.stored) == 2 * 6
    assert rig.sample("cdnvideo_remote_write_samples_total", outcome="rejected") == 2
    assert rig.sample("cdnvideo_remote_write_samples_total", outcome="sent") == 12
    assert rig.sample("cdnvideo_remote_write_pending_minutes", account=ACC) == 0
    dropped = [e for e in logs if e["event"] == "remote_write_dropped"]
    assert len(dropped) == 1  # once an hour per account and reason; every one counted
    assert dropped[0]["reason"] == "rejected"
    assert "rw-secret" not in repr(logs)


async def test_too_old_is_permanent_and_not_retried(receiver_rig: tuple[Receiver, Rig]) -> None:
    receiver, rig = receiver_rig
    receiver.answers = [(500, "out of bounds: too old sample")]
    w = rig.writer()
    offer(w, M)
    await w.flush()
    rig.clock.advance(600)
    await w.flush()
    assert len(receiver.bodies) == 1
    assert receiver.stored == []
    assert rig.sample("cdnvideo_remote_write_samples_total", outcome="too_old") == 1
    assert rig.sample("cdnvideo_remote_write_pending_minutes", account=ACC) == 0


async def test_no_sample_from_the_future_nor_past_max_age(
    receiver_rig: tuple[Receiver, Rig],
) -> None:
    receiver, rig = receiver_rig
    w = rig.writer()
    now_minute = M + 300
    offer(w, now_minute)  # has not closed yet on our clock
    offer(w, M + 300 - 61 * 60)  # older than max_age_minutes (60)
    await w.flush()
    assert receiver.bodies == []
    assert rig.sample("cdnvideo_remote_write_samples_total", outcome="too_old") == 1
    rig.clock.advance(60)
    await w.flush()
    assert stored(receiver) == {(now_minute * 1000, 10.0): 1}


async def test_a_store_that_cannot_be_written_keeps_minutes_in_memory_and_says_so(
    receiver_rig: tuple[Receiver, Rig],
) -> None:
    receiver, rig = receiver_rig
    occupy(f"{rig.state}.remote-write")
    w = rig.writer()
    with capture_logs() as logs:
        offer(w, M)
        await w.flush()
    assert stored(receiver) == {(M * 1000, 10.0): 1}
    failed = [e for e in logs if e["event"] == "remote_write_store_failed"]
    assert len(failed) == 2  # the minute's file, then the written index
    assert failed[0]["effect"] == "kept in memory only: a restart now would forget it"


async def test_the_senders_disk_writes_and_decoding_stay_off_the_event_loop(
    receiver_rig: tuple[Receiver, Rig], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each acknowledged minute is saved with two fsyncs and its body is parsed back to count
    its samples: on a busy disk or at 5,000 resources either would stall the loop that serves
    /metrics and /healthz."""
    receiver, rig = receiver_rig
    threads: dict[str, list[int]] = {"done": [], "count": []}
    done, count = MinuteStore.done, writer_module.count

    def spy_done(self: MinuteStore, *args: Any) -> None:
        threads["done"].append(threading.get_ident())
        done(self, *args)

    def spy_count(body: bytes) -> int:
        threads["count"].append(threading.get_ident())
        return count(body)

    monkeypatch.setattr(MinuteStore, "done", spy_done)
    monkeypatch.setattr(writer_module, "count", spy_count)
    receiver.answers = [(503, "down")]
    w = rig.writer()
    offer(w, M)
    offer(w, M + 300 - 61 * 60)  # past max_age_minutes: dropped, saved as done too
    await w.flush()  # the old one dropped, the other refused (retried later)
    rig.clock.advance(5)
    await w.flush()
    assert stored(receiver) == {(M * 1000, 10.0): 1}
    assert len(threads["done"]) == 2
    assert len(threads["count"]) == 3  # dropped, retried, sent
    loop_thread = threading.get_ident()
    assert loop_thread not in threads["done"] + threads["count"]


async def test_the_halves_of_a_split_are_encoded_off_the_event_loop(
    receiver_rig: tuple[Receiver, Rig], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 400 splits a minute into halves, each encoded anew: a minute of thousands of series
    would stall the loop that serves /metrics while it is encoded."""
    receiver, rig = receiver_rig
    receiver.bad = lambda s: ("resource", "103") in s.labels
    w = rig.writer()
    offer(w, M, 10.0, resources=6)
    threads: list[int] = []
    encode = writer_module.encode

    def spy(series: Any) -> bytes:
        threads.append(threading.get_ident())
        return encode(series)

    monkeypatch.setattr(writer_module, "encode", spy)
    await w.flush()
    assert len(receiver.stored) == 6  # the minute but the bad series
    assert len(threads) == 6  # halves down to the bad series: 7 series, 3 splits
    assert threading.get_ident() not in threads


@pytest.mark.parametrize("status", [401, 403, 404, 405, 413])
async def test_a_receiver_refusing_the_request_keeps_the_minute_pending_unsplit(
    receiver_rig: tuple[Receiver, Rig], status: int
) -> None:
    """Not a 400 naming bad samples: the receiver's set-up (credentials, path, a redirect that
    turned the POST into a GET). One request per try, nothing dropped, the minute pending (the
    Pending and Stalled alerts read that), retried after a backoff, the status logged as got."""
    receiver, rig = receiver_rig
    receiver.answers = [(status, "nope"), (status, "nope")]
    w = rig.writer()
    with capture_logs() as logs:
        offer(w, M, 10.0, resources=6)
        await w.flush()
        assert len(receiver.bodies) == 1  # not split
        rig.clock.advance(5)
        await w.flush()
    assert len(receiver.bodies) == 2
    assert receiver.stored == []
    assert rig.sample("cdnvideo_remote_write_pending_minutes", account=ACC) == 1
    age = "cdnvideo_remote_write_oldest_pending_minute_age_seconds"
    assert rig.sample(age, account=ACC) == 305
    assert rig.sample("cdnvideo_remote_write_samples_total", outcome="rejected") == 0
    assert rig.sample("cdnvideo_remote_write_samples_total", outcome="retried") == 14
    refused = [e for e in logs if e["event"] == "remote_write_refused"]
    assert len(refused) == 1  # once an hour per account and reason
    assert (refused[0]["status"], refused[0]["log_level"]) == (status, "warning")
    assert "kept pending" in refused[0]["action"]
    rig.clock.advance(5)
    await w.flush()  # the second failure doubled the backoff to 10 s
    assert len(receiver.bodies) == 2
    rig.clock.advance(5)
    await w.flush()  # the receiver is fixed: everything is written
    assert len(receiver.stored) == 7
    assert rig.sample("cdnvideo_remote_write_pending_minutes", account=ACC) == 0
    assert rig.sample("cdnvideo_remote_write_samples_total", outcome="sent") == 7
