"""Integration: restream, DVR and talking-head pollers against the simulator over real HTTP.

Values are read back from the rendered exposition (what a scrape gets) and compared with the
simulator's own replies, fetched separately at the same instant of the fake clock.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import os
import re
import shutil
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest
import structlog
from aiohttp.test_utils import TestServer
from prometheus_client.parser import text_string_to_metric_families

from exporter.config import UpstreamSettings
from exporter.dvr import DvrPoller
from exporter.dvr import poller as dvr_poller
from exporter.dvr.settings import DvrSettings
from exporter.exposition import Store
from exporter.exposition import store as store_module
from exporter.restream import KeyFingerprint, RestreamPoller
from exporter.restream import poller as restream_poller
from exporter.restream.settings import RestreamSettings
from exporter.runtime.polling import PollRunner
from exporter.runtime.selfmetrics import SelfMetrics
from exporter.simulator import SimConfig, Simulator
from exporter.support.clock import FakeClock
from exporter.support.logs import MASK, Redactor, configure_logging
from exporter.support.secrets import QUERY_ALLOWED
from exporter.talking_head import TalkingHeadPoller
from exporter.talking_head.settings import TalkingHeadSettings
from exporter.upstream import UpstreamClient, models

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
    base_url = str(server.make_url("")).rstrip("/")
    metrics = SelfMetrics()
    store = Store(clock, extra=metrics.render)
    redactor = Redactor([TOKEN])
    async with aiohttp.ClientSession() as session:
        client = UpstreamClient(
            session,
            UpstreamSettings(base_url=base_url, token=TOKEN),
            metrics,
            clock,
            redactor,
            backoff_seconds=0.0,
        )
        yield Rig(
            sim,
            clock,
            base_url,
            session,
            store,
            PollRunner(metrics, clock),
            RestreamPoller(
                client,
                store,
                clock,
                RestreamSettings(True, RESTREAM_S, HISTORY_S),
                redactor,
                fingerprint_secret=TOKEN,
            ),
            DvrPoller(client, store, clock, DvrSettings(True, DVR_S), STREAMS),
            TalkingHeadPoller(client, store, clock, TalkingHeadSettings(True, TH_S)),
            redactor,
        )


FP = KeyFingerprint(TOKEN.encode())  # the upstream token keys the fingerprint, as in the service


def label_url(url: str) -> str:
    """A target URL as its label must read: no userinfo, query values but the allowed names
    as ``********#<fingerprint>`` (docs/metrics.md)."""
    head, _, query = no_userinfo(url).partition("?")
    if not query:
        return head
    pairs = [pair.partition("=") for pair in query.split("&")]
    shown = [n + "=" + (v if n in QUERY_ALLOWED else f"{MASK}#{FP(v)}") for n, _, v in pairs]
    return head + "?" + "&".join(shown)


def label_text(text: str) -> str:
    """A name or description as its label must read: a URL inside it (to the end of the text:
    nothing in a query can be trusted to end it) masked as a target URL is."""
    m = re.search(r"[A-Za-z][A-Za-z0-9+.-]*://", text)
    return text if m is None else text[: m.start()] + label_url(text[m.start() :])


def target_labels(account: str, rid: str, source: str, url: str, key: str) -> dict[str, str]:
    return {
        "account": account,
        "resource_id": rid,
        "source": source,
        "target": label_url(url),
        "target_key": FP(key),
    }


YT_1001 = target_labels(
    "demo-media",
    "1001",
    "rtmp://publish.demo-media.example/live/main",
    YOUTUBE,
    "yt-SECRET-KEY-1001",
)


# --- restream --------------------------------------------------------------------------------
async def test_every_restream_family_matches_the_platform(rig: Rig) -> None:
    rig.sim.force_restream_status("demo-media", "1001", YOUTUBE, 11)  # a code nobody documented
    rig.sim.requests.clear()
    for account in ACCOUNTS:
        assert await rig.poll("restream", account)
    sent = rig.sim.requests.all()
    for account in ACCOUNTS:  # exactly one /resources and one /status per account
        base = f"/app/restream/v2/{account}"
        assert sorted(r.path for r in sent if r.path.startswith(base)) == [
            f"{base}/resources",
            f"{base}/status",
        ]
    samples = await rig.scrape()
    expected: dict[str, dict[Labels, float]] = {
        n: {}
        for n in (
            "cdnvideo_restream_resource_info",
            "cdnvideo_restream_resource_active",
            "cdnvideo_restream_status_code",
            "cdnvideo_restream_up",
            "cdnvideo_restream_scheduled",
            "cdnvideo_restream_status_info",
        )
    }
    for account in ACCOUNTS:
        path = f"/app/restream/v2/{account}"
        resources = (await rig.upstream(path + "/resources"))["data"]["resources"]
        status = {
            r["resource_id"]: r["status"] for r in (await rig.upstream(path + "/status"))["data"]
        }
        for res in resources:
            rid = res["resource_id"]
            name = label_text(res["name"])
            info = lab(account=account, resource_id=rid, name=name, type=res["type"])
            expected["cdnvideo_restream_resource_info"][info] = 1
            active = lab(account=account, resource_id=rid)
            expected["cdnvideo_restream_resource_active"][active] = 1 if res["active"] else 0
            for entry, st in zip(res["restreams"], status[rid], strict=True):
                t = target_labels(account, rid, st["source"], st["target_url"], st["target_key"])
                code = st["status"]["code"]
                expected["cdnvideo_restream_status_code"][lab(**t)] = code
                expected["cdnvideo_restream_up"][lab(**t)] = 1 if code == 0 else 0
                description = label_text(st["status"]["description"])
                info_t = lab(**t, code=str(code), description=description)
                expected["cdnvideo_restream_status_info"][info_t] = 1
                expected["cdnvideo_restream_scheduled"][lab(**t)] = 0 if entry["schedule"] else 1
    for name, want in expected.items():
        assert series(samples, name) == want, name

    # the cases spelled out
    shop = "demo-shop"
    info = lab(
        account=shop, resource_id="2001", name="Main stage to YouTube and Twitch", type="short"
    )
    assert samples[("cdnvideo_restream_resource_info", info)] == 1
    assert (
        samples[("cdnvideo_restream_resource_active", lab(account=shop, resource_id="2004"))] == 0
    )
    yt = lab(**YT_1001)
    assert samples[("cdnvideo_restream_status_code", yt)] == 11
    assert samples[("cdnvideo_restream_up", yt)] == 0
    yt_info = lab(**YT_1001, code="11", description="Unknown status")
    assert samples[("cdnvideo_restream_status_info", yt_info)] == 1
    archived = target_labels(
        "demo-media",
        "1004",
        "rtmp://publish.demo-media.example/live/promo",
        "rtmp://live.ok.example/live",
        "ok-SECRET-KEY-1004",
    )
    assert samples[("cdnvideo_restream_status_code", lab(**archived))] == 7
    relay = {dict(k)["target"] for k in series(samples, "cdnvideo_restream_up")}
    assert f"rtmp://{RELAY_HOST}" in relay
    evening = [
        k
        for k in series(samples, "cdnvideo_restream_scheduled")
        if dict(k)["resource_id"].endswith("003")
    ]
    assert len(evening) == 3
    assert all(samples[("cdnvideo_restream_scheduled", e)] == 0 for e in evening)


async def test_scheduled_turns_on_inside_the_evening_window(rig: Rig) -> None:
    rig.clock.set(T0 - 30 + 3600 + 60)  # 18:01:00Z
    assert await rig.poll("restream", "demo-media")
    samples = await rig.scrape()
    sched = series(samples, "cdnvideo_restream_scheduled")
    evening = {k: v for k, v in sched.items() if dict(k)["resource_id"] == "1003"}
    assert list(evening.values()) == [1]
    rig.clock.set(T0 - 30 + 3 * 3600)  # 20:00:00Z, the stop is exclusive
    assert await rig.poll("restream", "demo-media")
    sched = series(await rig.scrape(), "cdnvideo_restream_scheduled")
    assert [v for k, v in sched.items() if dict(k)["resource_id"] == "1003"] == [0]


async def test_status_change_is_picked_up_within_one_interval(rig: Rig) -> None:
    relay_url = f"rtmp://relay:url-SECRET-PASS-2002@{RELAY_HOST}"
    src = "rtmp://publish.demo-shop.example/live/backup"
    t = lab(**target_labels("demo-shop", "2002", src, relay_url, "relay-SECRET-KEY-2002"))
    assert await rig.poll("restream", "demo-shop")
    before = (await rig.scrape())[("cdnvideo_restream_status_code", t)]
    new_code = 3 if before != 3 else 2
    rig.sim.force_restream_status("demo-shop", "2002", relay_url, new_code)
    rig.clock.advance(RESTREAM_S)
    assert await rig.poll("restream", "demo-shop")
    samples = await rig.scrape()
    assert samples[("cdnvideo_restream_status_code", t)] == new_code
    assert samples[("cdnvideo_restream_up", t)] == 0
    rig.sim.force_restream_status("demo-shop", "2002", relay_url, 0)
    rig.clock.advance(RESTREAM_S)
    assert await rig.poll("restream", "demo-shop")
    samples = await rig.scrape()
    assert samples[("cdnvideo_restream_up", t)] == 1
    assert (
        samples[("cdnvideo_restream_status_info", lab(**dict(t), code="0", description="OK"))] == 1
    )


async def test_status_changed_timestamps_follow_the_history(rig: Rig) -> None:
    for account in ACCOUNTS:
        assert await rig.poll("restream", account)
        assert await rig.poll("restream_history", account)
    sent = rig.sim.requests.find(path_prefix="/app/restream/v2/demo-03/history")
    assert len(sent) == 4  # one per resource
    assert {(r.params["start"][0], r.params["end"][0]) for r in sent} == {
        ("2025-12-31T17:00:30Z", "2026-01-01T17:00:30Z")
    }
    samples = await rig.scrape()
    want: dict[Labels, float] = {}
    for account in ACCOUNTS:
        path = f"/app/restream/v2/{account}"
        for res in (await rig.upstream(path + "/resources"))["data"]["resources"]:
            rid = res["resource_id"]
            reply = await rig.upstream(
                path + "/history",
                resource_id=rid,
                start="2025-12-31T17:00:30Z",
                end="2026-01-01T17:00:30Z",
            )
            for item in reply["data"]:
                for url, keys in item["history"].items():
                    for key, points in keys.items():
                        if points:  # the simulator lists change points only
                            t = target_labels(account, rid, item["source"], url, key)
                            want[lab(**t)] = points[-1]["time"]
    assert want  # the default data set changes status within a day
    assert series(samples, "cdnvideo_restream_status_changed_timestamp_seconds") == want

    # a change between two history reads
    rig.clock.advance(100)
    changed_at = rig.clock.time()
    rig.sim.force_restream_status("demo-media", "1001", YOUTUBE, 11)
    rig.clock.advance(HISTORY_S - 100)
    assert await rig.poll("restream", "demo-media")  # the status poll sees 1001 change
    rig.sim.requests.clear()
    assert await rig.poll("restream_history", "demo-media")
    sent = rig.sim.requests.find(path_prefix="/app/restream/v2/demo-media/history")
    # only the changed resource is read again, from its last read (60 s overlap)
    assert [(r.params["resource_id"][0], r.params["start"][0]) for r in sent] == [
        ("1001", "2026-01-01T16:59:30Z")
    ]
    samples = await rig.scrape()
    changed = ("cdnvideo_restream_status_changed_timestamp_seconds", lab(**YT_1001))
    assert samples[changed] == changed_at


# --- DVR -------------------------------------------------------------------------------------
async def expected_dvr(rig: Rig) -> dict[str, dict[Labels, float]]:
    want: dict[str, dict[Labels, float]] = {
        f"cdnvideo_dvr_{n}": {}
        for n in (
            "alive",
            "enabled",
            "window",
            "recorded_seconds",
            "ranges",
            "first_recording_timestamp_seconds",
            "last_recording_end_timestamp_seconds",
        )
    }
    for account, streams in STREAMS.items():
        for stream in streams:
            reply = await rig.upstream(f"/app/dvr-net/v1/{account}/streams/{stream}")
            for node in reply["data"]:
                k = lab(account=account, stream=stream, host=node["host"])
                dvr = node["dvr"]
                want["cdnvideo_dvr_alive"][k] = 1 if node["is_alive"] else 0
                want["cdnvideo_dvr_enabled"][k] = 1 if dvr["enabled"] else 0
                want["cdnvideo_dvr_window"][k] = dvr["window"]
                want["cdnvideo_dvr_recorded_seconds"][k] = dvr["duration"]
                want["cdnvideo_dvr_ranges"][k] = len(dvr["ranges"])
                if dvr["from"]:
                    want["cdnvideo_dvr_first_recording_timestamp_seconds"][k] = dvr["from"]
                if dvr["ranges"]:
                    want["cdnvideo_dvr_last_recording_end_timestamp_seconds"][k] = max(
                        r["from"] + r["duration"] for r in dvr["ranges"]
                    )
    return want


async def test_every_dvr_family_matches_the_platform_with_a_dead_node(rig: Rig) -> None:
    rig.sim.dvr.set_node("dvr-msk-2", alive=False)
    rig.clock.advance(600)
    rig.sim.requests.clear()
    for account in ACCOUNTS:
        assert await rig.poll("dvr", account)
    paths = sorted(r.path for r in rig.sim.requests.all())
    assert paths == sorted(
        f"/app/dvr-net/v1/{a}/streams/{s}" for a, streams in STREAMS.items() for s in streams
    )
    samples = await rig.scrape()
    want = await expected_dvr(rig)
    for name, values in want.items():
        assert series(samples, name) == values, name
    main = lab(account="demo-media", stream="live/main", host="dvr-msk-2")
    assert samples[("cdnvideo_dvr_alive", main)] == 0  # dead, but its archive is still reported
    assert samples[("cdnvideo_dvr_recorded_seconds", main)] > 0
    ok = lab(account="demo-media", stream="live/main", host="dvr-msk-1")
    assert samples[("cdnvideo_dvr_alive", ok)] == 1
    assert samples[("cdnvideo_dvr_window", ok)] == 14400
    assert samples[("cdnvideo_dvr_enabled", ok)] == 1
    assert samples[("cdnvideo_dvr_last_recording_end_timestamp_seconds", ok)] == rig.clock.time()
    assert len(series(samples, "cdnvideo_dvr_alive")) == 3 + 2 + 3 + 2 + 3  # hosts per stream


async def test_the_dvr_fragment_is_built_off_the_event_loop(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Building the fragment of 500 streams holds the GIL ~20 ms: a worker thread does it."""
    import threading

    from exporter.dvr import poller as dvr_poller

    built: list[int] = []
    build = dvr_poller.dvr_fragment

    def spying(*args: Any) -> Any:
        built.append(threading.get_ident())
        return build(*args)

    monkeypatch.setattr(dvr_poller, "dvr_fragment", spying)
    assert await rig.poll("dvr", "demo-media")
    assert len(built) == 1
    assert built[0] != threading.get_ident()
    assert 'cdnvideo_dvr_alive{account="demo-media",stream="live/main",host="dvr-msk-1"} 1' in (
        await rig.text()
    )


async def test_a_node_that_disappears_loses_its_series(rig: Rig) -> None:
    assert await rig.poll("dvr", "demo-media")
    assert 'host="dvr-spb-1"' in await rig.text()
    rig.sim.dvr.set_node("dvr-spb-1", hidden=True)
    rig.clock.advance(DVR_S)
    assert await rig.poll("dvr", "demo-media")
    text = await rig.text()
    assert 'host="dvr-spb-1"' not in text
    assert 'cdnvideo_dvr_alive{account="demo-media",stream="live/main",host="dvr-msk-1"} 1' in text
    want = (await expected_dvr(rig))["cdnvideo_dvr_ranges"]
    polled = {k: v for k, v in want.items() if dict(k)["account"] == "demo-media"}
    assert series(await rig.scrape(), "cdnvideo_dvr_ranges") == polled
    assert len(polled) == 2 + 1  # live/main on two visible nodes, news on one


# --- talking head ----------------------------------------------------------------------------
async def test_every_talking_head_family(rig: Rig) -> None:
    rig.sim.requests.clear()
    for account in ACCOUNTS:
        assert rig.th.latest_configurations(account) is None
        assert await rig.poll("talking_head", account)
        assert rig.th.latest_configurations(account) is not None
    assert len(rig.sim.requests) == len(ACCOUNTS)  # one /configurations each
    samples = await rig.scrape()
    for i, account in enumerate(ACCOUNTS):
        a = lab(account=account)
        assert samples[("cdnvideo_talking_head_quota_limit", a)] == 100
        assert samples[("cdnvideo_talking_head_quota_left", a)] == 97  # three seeded videos
        assert samples[("cdnvideo_talking_head_watermark", a)] == i % 2
        assert samples[("cdnvideo_talking_head_voices", a)] == 5
        assert samples[("cdnvideo_talking_head_models", a)] == 3  # Natalia 1.0.0, 1.1.0; Mikhail


# --- failures ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("area", "interval", "family"),
    [
        ("restream", RESTREAM_S, "cdnvideo_restream_status_code"),
        ("dvr", DVR_S, "cdnvideo_dvr_alive"),
        ("talking_head", TH_S, "cdnvideo_talking_head_quota_left"),
    ],
)
async def test_fault_keeps_last_values_then_drops_them_after_five_intervals(
    rig: Rig, area: str, interval: float, family: str
) -> None:
    account = "demo-shop"
    assert await rig.poll(area, account)
    good = series(await rig.scrape(), family)
    assert good
    up = ("cdnvideo_up", lab(account=account, area=area))
    last = ("cdnvideo_last_success_timestamp_seconds", lab(account=account, area=area))
    rig.sim.faults.set(area, "503")
    for _ in range(5):
        rig.clock.advance(interval)
        assert not await rig.poll(area, account)
        samples = await rig.scrape()
        assert samples[up] == 0
        assert samples[last] == T0
        assert series(samples, family) == good  # the last good values, unchanged
    rig.clock.advance(1)
    samples = await rig.scrape()
    assert series(samples, family) == {}  # older than 5 intervals: not shown as current
    assert samples[up] == 0
    rig.sim.faults.clear()
    rig.clock.advance(interval)
    assert await rig.poll(area, account)
    samples = await rig.scrape()
    assert samples[up] == 1
    assert series(samples, family)


async def test_one_failing_dvr_stream_does_not_blank_the_others(rig: Rig) -> None:
    assert await rig.poll("dvr", "demo-media")
    rig.sim.faults.set("dvr", "500", match="/streams/news")
    rig.clock.advance(DVR_S)
    assert not await rig.poll("dvr", "demo-media")
    samples = await rig.scrape()
    assert samples[("cdnvideo_up", lab(account="demo-media", area="dvr"))] == 0
    streams = {dict(k)["stream"] for k in series(samples, "cdnvideo_dvr_alive")}
    assert streams == {"live/main", "news"}


# --- secrets ---------------------------------------------------------------------------------
@pytest.fixture
def log_buffer() -> Iterator[io.StringIO]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield io.StringIO()
    structlog.reset_defaults()
    root.handlers[:] = handlers
    root.setLevel(level)


def planted(data: Any) -> set[str]:
    """Every string in a reply that holds a planted secret (they all contain SECRET)."""
    if isinstance(data, dict):
        return set().union(*(planted(v) for v in data.values())) if data else set()
    if isinstance(data, list):
        return set().union(*(planted(v) for v in data)) if data else set()
    return {data} if isinstance(data, str) and "SECRET" in data else set()


async def test_no_secret_reaches_the_exposition_or_the_log(
    rig: Rig, log_buffer: io.StringIO
) -> None:
    configure_logging(level="debug", fmt="json", stream=log_buffer, redactor=rig.redactor)
    await rig.poll_everything()
    # an error body that is not a rate limit (that would pause the account's polls)
    rig.sim.faults.set("restream", "error_200", body={"status": "error", "message": "failed"})
    rig.clock.advance(RESTREAM_S)
    assert not await rig.poll("restream", "demo-media")
    rig.sim.faults.clear()
    rig.sim.force_restream_status("demo-media", "1001", YOUTUBE, 11)
    assert await rig.poll("restream", "demo-media")  # a change: its history is read next
    rig.sim.faults.set("restream", "500", match="/history")
    assert not await rig.poll("restream_history", "demo-media")
    rig.sim.faults.clear()

    secrets = {TOKEN}
    for account in ACCOUNTS:
        path = f"/app/restream/v2/{account}"
        resources = await rig.upstream(path + "/resources")
        secrets |= planted(resources) | planted(await rig.upstream(path + "/status"))
        for res in resources["data"]["resources"]:
            for e in res["restreams"]:
                for url in (e["target_url"], e["backup"].get("target_url", "")):
                    m = re.match(r"^[a-z]+://([^/]*)@", url)
                    if m:
                        secrets |= {m.group(1), m.group(1).partition(":")[2]}
                # a log line that names the secrets in free text: masked only because the
                # pollers taught the redactor what they saw
                structlog.get_logger("test").info(
                    "probe",
                    text=f"{e['target_key']} {e['password']} {e['backup']} {e['target_url']}",
                )
    assert len(secrets) > 20
    assert any(s.startswith("relay:url-SECRET-PASS") for s in secrets)
    assert any(s.startswith("bk-SECRET-PASS") for s in secrets)

    exposition = await rig.text()
    assert "cdnvideo_restream_status_code" in exposition
    logged = log_buffer.getvalue()
    lines = logged.splitlines()
    assert any('"poll_failed"' in line for line in lines)
    assert any('"probe"' in line and "********" in line for line in lines)
    for line in lines:
        json.loads(line)
    for secret in secrets:
        assert secret not in exposition, secret
        assert secret not in logged, secret
    assert "SECRET" not in exposition
    assert "SECRET" not in logged


# --- promtool ----------------------------------------------------------------------------------
async def test_exposition_passes_promtool(rig: Rig) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        if os.environ.get("CDNVIDEO_REQUIRE_TOOLS"):
            pytest.fail("promtool is required (CDNVIDEO_REQUIRE_TOOLS is set)")
        pytest.skip("promtool not installed")
    await rig.poll_everything()
    proc = await asyncio.create_subprocess_exec(
        promtool,
        "check",
        "metrics",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output, _ = await proc.communicate((await rig.text()).encode())
    assert proc.returncode == 0, output
    assert output == b""  # not even a lint warning


async def test_a_refresh_parses_and_builds_on_one_thread_off_the_loop(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Replies are parsed, digested and built into fragments, and the exposition rendered, on
    the one "refresh" thread (support.offloop), never on the event loop and never spread over
    several threads competing for the GIL."""
    threads: dict[str, set[str]] = {}

    def spy(module: object, name: str) -> None:
        real = getattr(module, name)

        def wrapped(*args: Any, **kwargs: Any) -> Any:
            threads.setdefault(name, set()).add(threading.current_thread().name)
            return real(*args, **kwargs)

        monkeypatch.setattr(module, name, wrapped)

    spy(models, "parse_restream_resources")
    spy(models, "parse_restream_status")
    spy(restream_poller, "status_fragment")
    spy(restream_poller, "fold_histories")
    spy(dvr_poller, "dvr_fragment")
    spy(store_module.Store, "render_sync")
    await rig.poll_everything()
    samples = await rig.scrape()
    assert series(samples, "cdnvideo_dvr_alive")  # the polls did publish
    assert set(threads) == {
        "parse_restream_resources",
        "parse_restream_status",
        "status_fragment",
        "fold_histories",
        "dvr_fragment",
        "render_sync",
    }
    used = set().union(*threads.values())
    assert len(used) == 1, threads
    assert used.pop().startswith("refresh")
