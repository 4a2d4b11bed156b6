"""A poll's log lines name its account through structlog's contextvars, bound once per poll:
concurrent polls of two accounts each log their own, and nothing stays bound after a poll."""

from __future__ import annotations

import asyncio
import functools

import structlog
from structlog.contextvars import get_contextvars, merge_contextvars
from structlog.testing import capture_logs

from exporter.dvr import DvrPoller
from exporter.dvr.reply import DvrNode
from exporter.dvr.settings import DvrSettings
from exporter.exposition import Fragment, Store, StoreKey
from exporter.runtime.polling import PollRunner
from exporter.runtime.selfmetrics import SelfMetrics
from exporter.support.clock import FakeClock
from exporter.upstream import UpstreamError

NOW = 1_767_225_600.0
STREAMS = {"acme": ("live/main",), "shop": ("news", "gone")}

log = structlog.get_logger("tests.poll_log_context")


class BothAtOnce:
    """A DVR client whose replies wait until both accounts have asked (so the two polls run
    side by side), logging each request as the upstream client does: without an account."""

    def __init__(self) -> None:
        self.order: list[tuple[str, str]] = []
        self._asked: set[str] = set()
        self._both = asyncio.Event()

    async def dvr_stream(self, account: str, stream: str) -> list[DvrNode]:
        log.info("fake_request", stream=stream)
        self._asked.add(account)
        if len(self._asked) == len(STREAMS):
            self._both.set()
        await self._both.wait()
        self.order.append(("reply", account))
        if stream == "gone":
            raise UpstreamError("dvr", "http", "Not found", 404)
        return [DvrNode(stream, "n1", True, True, 7200, 0, 0, ())]


async def test_two_accounts_polled_at_once_each_log_their_own_account() -> None:
    clock = FakeClock(NOW)
    store, client = Store(clock), BothAtOnce()
    poller = DvrPoller(client, store, clock, DvrSettings(), STREAMS)
    runner = PollRunner(SelfMetrics(), clock)

    def published(key: StoreKey, fragment: Fragment) -> None:
        client.order.append(("publish", key.account))

    store.listen(published)
    with capture_logs(processors=[merge_contextvars]) as logs:
        results = await asyncio.gather(
            *(runner.run("dvr", a, functools.partial(poller.poll, a), "dvr") for a in STREAMS)
        )
        log.info("after_the_polls")
    assert results == [True, False]
    # both polls had their replies before either published: their bound parts overlapped
    assert sorted(client.order[-2:]) == [("publish", "acme"), ("publish", "shop")]
    assert {step for step, _ in client.order[:-2]} == {"reply"}
    lines = [(e["event"], e.get("area"), e.get("account")) for e in logs]
    assert sorted(lines) == [
        ("after_the_polls", None, None),
        ("dvr_polled", None, "acme"),
        ("dvr_polled", None, "shop"),
        ("fake_request", None, None),
        ("fake_request", None, None),
        ("fake_request", None, None),
        ("poll_failed", "dvr", "shop"),
    ]
    polled = {e["account"]: (e["streams"], e["failed"]) for e in logs if e["event"] == "dvr_polled"}
    assert polled == {"acme": (1, 0), "shop": (2, 1)}
    assert get_contextvars() == {}


async def test_nothing_stays_bound_between_polls_in_one_task() -> None:
    clock = FakeClock(NOW)
    store, client = Store(clock), BothAtOnce()
    client._both.set()
    poller = DvrPoller(client, store, clock, DvrSettings(), STREAMS)
    runner = PollRunner(SelfMetrics(), clock)
    with capture_logs(processors=[merge_contextvars]) as logs:
        await runner.run("dvr", "shop", functools.partial(poller.poll, "shop"), "dvr")
        log.info("between")
        await runner.run("dvr", "acme", functools.partial(poller.poll, "acme"), "dvr")
    lines = [(e["event"], e.get("area"), e.get("account")) for e in logs]
    assert [line for line in lines if line[0] != "fake_request"] == [
        ("dvr_polled", None, "shop"),
        ("poll_failed", "dvr", "shop"),
        ("between", None, None),
        ("dvr_polled", None, "acme"),
    ]
