"""The areas' rig: the restream, DVR and talking-head pollers against the simulator over real
HTTP, on one FakeClock, with the rendered exposition read back (``rig`` fixture)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestServer
from prometheus_client.parser import text_string_to_metric_families

from exporter.config import UpstreamSettings
from exporter.dvr import DvrPoller
from exporter.dvr.reply import DvrReader
from exporter.dvr.settings import DvrSettings
from exporter.exposition import Store
from exporter.restream import RestreamPoller
from exporter.restream.reply import RestreamReader
from exporter.restream.settings import RestreamSettings
from exporter.runtime.polling import PollRunner
from exporter.runtime.selfmetrics import SelfMetrics
from exporter.simulator import SimConfig, Simulator
from exporter.support.clock import FakeClock
from exporter.support.logs import Redactor
from exporter.talking_head import TalkingHeadPoller
from exporter.talking_head.reply import TalkingHeadReader
from exporter.talking_head.settings import TalkingHeadSettings
from tests.rig.client import connect, server_url

T0 = 1_767_225_600 + 17 * 3600 + 30  # 2026-01-01T17:00:30Z; the evening schedule starts 18:00
TOKEN = "upstream-SECRET-token-7f3e9a"
ACCOUNTS = ("demo-media", "demo-shop", "demo-03")
STREAMS = {
    "demo-media": ("live/main", "news"),
    "demo-shop": ("live/main",),
    "demo-03": ("news", "live/main"),
}
YOUTUBE = "rtmp://a.rtmp.youtube.com/live2"
RELAY_HOST = "relay.partner.example:1935/live"
RESTREAM_S, HISTORY_S, DVR_S, TH_S = 30.0, 300.0, 60.0, 21600.0
ServerFactory = Callable[..., Awaitable[TestServer]]
Labels = tuple[tuple[str, str], ...]


def parse(text: str) -> dict[tuple[str, Labels], float]:
    out: dict[tuple[str, Labels], float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            key = (s.name, tuple(sorted(s.labels.items())))
            assert key not in out, f"duplicate series {key}"
            out[key] = s.value
    return out


def series(samples: dict[tuple[str, Labels], float], name: str) -> dict[Labels, float]:
    return {labels: v for (n, labels), v in samples.items() if n == name}


def lab(**labels: str) -> Labels:
    return tuple(sorted(labels.items()))


def no_userinfo(url: str) -> str:
    return re.sub(r"^([a-z]+://)[^/]*@", r"\1", url)


@dataclass
class Rig:
    sim: Simulator
    clock: FakeClock
    base_url: str
    session: aiohttp.ClientSession
    store: Store
    runner: PollRunner
    restream: RestreamPoller
    dvr: DvrPoller
    th: TalkingHeadPoller
    redactor: Redactor

    async def poll(self, area: str, account: str) -> bool:
        polls = {
            "restream": lambda: self.restream.poll(account),
            "restream_history": lambda: self.restream.poll_history(account),
            "dvr": lambda: self.dvr.poll(account),
            "talking_head": lambda: self.th.poll(account),
        }
        return await self.runner.run(area.removesuffix("_history"), account, polls[area])

    async def poll_everything(self) -> None:
        for account in ACCOUNTS:
            for area in ("restream", "restream_history", "dvr", "talking_head"):
                assert await self.poll(area, account), (area, account)

    async def scrape(self) -> dict[tuple[str, Labels], float]:
        return parse(await self.text())

    async def text(self) -> str:
        return (await self.store.render()).plain.decode()

    async def upstream(self, path: str, **params: str) -> Any:
        """The simulator's reply as the exporter sees it (left out of the request log)."""
        before = len(self.sim.requests)
        async with self.session.get(
            self.base_url + path, params=params, headers={"CDN-AUTH-TOKEN": TOKEN}
        ) as resp:
            assert resp.status == 200, await resp.text()
            data = await resp.json()
        assert len(self.sim.requests) == before + 1
        self.sim.requests.clear()
        return data


@pytest.fixture
async def rig(aiohttp_server: ServerFactory) -> AsyncIterator[Rig]:
    clock = FakeClock(T0)
    sim = Simulator(SimConfig(accounts=ACCOUNTS, token=TOKEN), clock)
    server = await aiohttp_server(sim.build_app(), host="127.0.0.1")
    base_url = server_url(server)
    metrics = SelfMetrics()
    store = Store(clock, extra=metrics.render)
    redactor = Redactor([TOKEN])
    async with aiohttp.ClientSession() as session:
        settings = UpstreamSettings(base_url=base_url, token=TOKEN)
        parts = connect(
            session, settings, clock, metrics=metrics, redactor=redactor, backoff_seconds=0.0
        )
        client = parts.client
        yield Rig(
            sim,
            clock,
            base_url,
            session,
            store,
            parts.runner,
            RestreamPoller(
                RestreamReader(client),
                store,
                clock,
                RestreamSettings(True, RESTREAM_S, HISTORY_S),
                redactor,
                fingerprint_secret=TOKEN,
            ),
            DvrPoller(DvrReader(client), store, clock, DvrSettings(True, DVR_S), STREAMS),
            TalkingHeadPoller(
                TalkingHeadReader(client), store, clock, TalkingHeadSettings(True, TH_S)
            ),
            redactor,
        )
