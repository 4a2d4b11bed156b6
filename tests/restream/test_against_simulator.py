"""Integration: the restream poller against the simulator over real HTTP.

Values are read back from the rendered exposition (what a scrape gets) and compared with the
simulator's own replies, fetched separately at the same instant of the fake clock.
"""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Iterator
from typing import Any

import pytest
import structlog

from exporter.restream import KeyFingerprint
from exporter.support.logs import MASK, configure_logging
from exporter.support.secrets import QUERY_ALLOWED
from tests.rig.areas import (
    ACCOUNTS,
    HISTORY_S,
    RELAY_HOST,
    RESTREAM_S,
    T0,
    TOKEN,
    YOUTUBE,
    Labels,
    Rig,
    lab,
    no_userinfo,
    rig,
    series,
)

__all__ = ["rig"]  # the fixture

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
