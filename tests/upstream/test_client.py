"""The upstream client against a real HTTP server: retries, timeouts, error bodies, metrics,
concurrency, paths, and the exact requests of every typed method and operation."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import pytest
from aiohttp import TCPConnector
from aiohttp.abc import AbstractResolver, ResolveResult

from exporter.config import UpstreamSettings
from exporter.dvr import reply as dvr_reply
from exporter.dvr.reply import DVR_DELETE, DVR_GET, DvrReader
from exporter.restream import reply as restream_reply
from exporter.restream.reply import (
    RESTREAM_CREATE,
    RESTREAM_GET,
    RESTREAM_HISTORY,
    RESTREAM_LIST,
    RESTREAM_STATUS,
    RESTREAM_UPDATE,
    RestreamReader,
)
from exporter.support import jsonpieces
from exporter.support.clock import FakeClock
from exporter.talking_head.reply import (
    TH_CANCEL,
    TH_CONFIGURATIONS,
    TH_DELETE,
    TH_GENERATE,
    TH_RENAME,
    TH_STATUS,
    TH_TASKS,
    TH_VIDEO_LINK,
    TalkingHeadReader,
)
from exporter.traffic import read as traffic_read
from exporter.traffic.reply import MetricsEndpoint, MetricsReply, MetricsRow
from exporter.traffic.steps import on_worker
from exporter.upstream import Operations, UpstreamClient, UpstreamError, models
from exporter.upstream import client as client_module
from tests.rig.client import MakeRig, Rig, connect
from tests.rig.scripted import Answer, FakePlatform

DVR = "/app/dvr-net/v1/acme/streams/live/main"
DVR_BODY = {
    "status": "Completed",
    "stream_name": "live/main",
    "data": [
        {
            "stream_name": "live/main",
            "host": "node-1",
            "is_alive": True,
            "dvr": {
                "enabled": True,
                "window": 3600,
                "duration": 1200,
                "from": 1767225000,
                "ranges": [{"from": 1767225000, "duration": 1200}],
            },
        }
    ],
}
RESOURCES = "/app/restream/v2/acme/resources"
CONFIGURATIONS = "/app/th-api/v1/accounts/acme/configurations"
METRICS = "/app/metrics/v1/"


class StepTimer:
    """A latency clock that moves only when told (by the fake platform, as requests arrive)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def count(rig: Rig, area: str, code: str) -> float | None:
    return rig.sample("cdnvideo_upstream_requests_total", area=area, code=code)


# --- retry policy -----------------------------------------------------------------------------
async def test_get_is_retried_on_503_then_succeeds(
    make_rig: MakeRig, platform: FakePlatform
) -> None:
    platform.on("GET", DVR, Answer(503, text="busy"), Answer(200, DVR_BODY))
    rig = make_rig()
    nodes = await DvrReader(rig.client).dvr_stream("acme", "live/main")
    assert [n.host for n in nodes] == ["node-1"]
    assert len(platform.requests("GET", DVR)) == 2
    assert count(rig, "dvr", "503") == 1
    assert count(rig, "dvr", "200") == 1


async def test_get_gives_up_after_the_retries(make_rig: MakeRig, platform: FakePlatform) -> None:
    platform.on("GET", DVR, Answer(503, {"status": "Unavailable", "description": "maintenance"}))
    rig = make_rig(retries=2)
    with pytest.raises(UpstreamError) as info:
        await DvrReader(rig.client).dvr_stream("acme", "live/main")
    assert (info.value.kind, info.value.status, info.value.message) == ("http", 503, "maintenance")
    assert len(platform.requests("GET", DVR)) == 3


async def test_post_is_never_retried_on_503(make_rig: MakeRig, platform: FakePlatform) -> None:
    platform.on("POST", RESOURCES, Answer(503, text="busy"), Answer(200, {"success": True}))
    rig = make_rig()
    reply = await rig.ops.send(RESTREAM_CREATE, "acme", body={"name": "r"})
    assert reply.status == 503
    assert len(platform.requests("POST", RESOURCES)) == 1


@pytest.mark.parametrize("method", ["PUT", "PATCH", "DELETE"])
async def test_other_changes_are_never_retried(
    make_rig: MakeRig, platform: FakePlatform, method: str
) -> None:
    platform.on(method, "/x", Answer(502, text="bad gateway"))
    rig = make_rig()
    reply = await rig.client.request("restream", method, "/x", body={"a": 1})
    assert reply.status == 502
    assert len(platform.requests(method, "/x")) == 1


async def test_get_with_retry_false_is_sent_once(make_rig: MakeRig, platform: FakePlatform) -> None:
    platform.on("GET", "/x", Answer(503))
    rig = make_rig()
    assert (await rig.client.request("dvr", "GET", "/x", retry=False)).status == 503
    assert len(platform.requests("GET", "/x")) == 1


async def test_404_is_not_retried(make_rig: MakeRig, platform: FakePlatform) -> None:
    platform.on(
        "GET",
        RESOURCES,
        Answer(404, {"success": False, "code": 404, "message": "Client not found"}),
    )
    rig = make_rig()
    with pytest.raises(UpstreamError) as info:
        await RestreamReader(rig.client).restream_resources("acme")
    assert (info.value.status, info.value.area, info.value.message) == (
        404,
        "restream",
        "Client not found",
    )
    assert len(platform.requests("GET", RESOURCES)) == 1


# --- timeouts, connection errors, bodies ------------------------------------------------------
async def test_timeout_gives_kind_timeout(make_rig: MakeRig, platform: FakePlatform) -> None:
    platform.on("GET", DVR, Answer(200, DVR_BODY, delay=1.0))
    rig = make_rig(timeout_seconds=0.1, retries=1)
    with pytest.raises(UpstreamError) as info:
        await DvrReader(rig.client).dvr_stream("acme", "live/main")
    assert (info.value.kind, info.value.status, info.value.area) == ("timeout", 0, "dvr")
    assert info.value.retryable
    assert len(platform.requests("GET", DVR)) == 2  # a read is retried after a timeout
    assert count(rig, "dvr", "timeout") == 2


async def test_timed_out_post_is_not_retried(make_rig: MakeRig, platform: FakePlatform) -> None:
    gen = "/app/th-api/v1/accounts/acme/generate"
    platform.on("POST", gen, Answer(202, {"status": "ok", "id": "t1"}, delay=1.0))
    rig = make_rig(timeout_seconds=0.1)
    with pytest.raises(UpstreamError) as info:
        await rig.ops.send(TH_GENERATE, "acme", body={"script": "hi"})
    assert info.value.kind == "timeout"
    assert len(platform.requests("POST", gen)) == 1


async def test_unreachable_platform_gives_kind_connection(make_rig: MakeRig) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again when the block ends: nothing listens
    rig = make_rig(base_url=f"http://127.0.0.1:{port}", retries=1)
    with pytest.raises(UpstreamError) as info:
        await DvrReader(rig.client).dvr_stream("acme", "live/main")
    assert (info.value.kind, info.value.area) == ("connection", "dvr")
    assert info.value.message == (
        f"GET /app/dvr-net/v1/acme/streams/live/main failed: "
        f"connection to 127.0.0.1:{port} failed (Connection refused)"
    )
    assert count(rig, "dvr", "connection_error") == 2


class NoSuchHost(AbstractResolver):
    """A resolver that knows no name, as a resolver without the platform's record answers."""

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        raise OSError(socket.EAI_NONAME, "Name or service not known")

    async def close(self) -> None:
        return None


async def test_a_failed_dns_lookup_names_the_host_not_the_exception_class() -> None:
    settings = UpstreamSettings(base_url="https://api.platform.test", token="static-token-abc")
    async with aiohttp.ClientSession(connector=TCPConnector(resolver=NoSuchHost())) as session:
        parts = connect(session, settings, FakeClock(), retries=0)
        with pytest.raises(UpstreamError) as info:
            await DvrReader(parts.client).dvr_stream("acme", "live/main")
    assert info.value.kind == "connection"
    assert info.value.message == (
        "GET /app/dvr-net/v1/acme/streams/live/main failed: "
        "DNS lookup of api.platform.test failed (Name or service not known)"
    )
    assert "ClientConnectorDNSError" not in str(info.value)


async def test_malformed_json_is_invalid_body(make_rig: MakeRig, platform: FakePlatform) -> None:
    platform.on("GET", DVR, Answer(200, text='{"status": "Completed", "data": ['))
    rig = make_rig()
    with pytest.raises(UpstreamError) as info:
        await DvrReader(rig.client).dvr_stream("acme", "live/main")
    assert (info.value.kind, info.value.message) == ("invalid_body", "reply is not JSON")
    assert count(rig, "dvr", "invalid_body") == 1
    assert count(rig, "dvr", "200") is None  # counted once, as what it was
    assert len(platform.requests("GET", DVR)) == 1


async def test_json_of_the_wrong_shape_is_invalid_body(
    make_rig: MakeRig, platform: FakePlatform
) -> None:
    platform.on("GET", DVR, Answer(200, {"status": "Completed", "data": {"not": "a list"}}))
    rig = make_rig()
    with pytest.raises(UpstreamError) as info:
        await DvrReader(rig.client).dvr_stream("acme", "live/main")
    assert (info.value.kind, info.value.message) == (
        "invalid_body",
        "dvr reply.data: expected a list, got dict",
    )


async def test_http_200_with_rate_limit_body_is_an_error(
    make_rig: MakeRig, platform: FakePlatform
) -> None:
    platform.on(
        "GET", CONFIGURATIONS, Answer(200, {"status": "error", "message": "Rate limit exceeded"})
    )
    rig = make_rig()
    with pytest.raises(UpstreamError) as info:
        await TalkingHeadReader(rig.client).th_configurations("acme")
    err = info.value
    assert (err.kind, err.status, err.area, err.message) == (
        "error_body",
        200,
        "talking_head",
        "Rate limit exceeded",
    )
    assert err.body == {"status": "error", "message": "Rate limit exceeded"}
    assert not err.retryable
    assert count(rig, "talking_head", "error_body") == 1
    assert count(rig, "talking_head", "200") is None


# --- each area's error shape ------------------------------------------------------------------
Call = Callable[[UpstreamClient], Awaitable[Any]]


@pytest.mark.parametrize(
    ("method", "path", "answer", "call", "area", "message"),
    [
        (
            "GET",
            RESOURCES,
            Answer(400, {"success": False, "code": 400, "message": "Client not found"}),
            lambda c: RestreamReader(c).restream_resources("acme"),
            "restream",
            "Client not found",
        ),
        (
            "GET",
            DVR,
            Answer(404, {"status": "Not Found", "description": "Stream not found"}),
            lambda c: DvrReader(c).dvr_stream("acme", "live/main"),
            "dvr",
            "Stream not found",
        ),
        (
            "GET",
            METRICS,
            Answer(
                422,
                {
                    "status": "Unprocessable Entity",
                    "description": "Invalid time format. Time must be at minute precision",
                },
            ),
            lambda c: MetricsEndpoint(c).traffic(
                "acme", 1767225600, 1767225660, per_resource=False
            ),
            "traffic",
            "Invalid time format. Time must be at minute precision",
        ),
        (
            "GET",
            METRICS,
            Answer(403, {"status": "Forbidden", "description": "Invalid token or no access"}),
            lambda c: MetricsEndpoint(c).traffic(
                "acme", 1767225600, 1767225660, per_resource=False
            ),
            "traffic",
            "Invalid token or no access",
        ),
        (
            "GET",
            CONFIGURATIONS,
            Answer(400, {"status": "ERROR", "message": "Invalid account"}),
            lambda c: TalkingHeadReader(c).th_configurations("acme"),
            "talking_head",
            "Invalid account",
        ),
    ],
)
async def test_each_areas_error_body_becomes_one_error_type(
    make_rig: MakeRig,
    platform: FakePlatform,
    method: str,
    path: str,
    answer: Answer,
    call: Call,
    area: str,
    message: str,
) -> None:
    platform.on(method, path, answer)
    rig = make_rig()
    with pytest.raises(UpstreamError) as info:
        await call(rig.client)
    err = info.value
    assert (err.kind, err.status, err.area, err.message) == ("http", answer.status, area, message)
    assert err.body == answer.json
    assert str(err) == f"{area}: {message} (HTTP {answer.status})"


@pytest.mark.parametrize(
    ("path", "body", "call", "area", "message"),
    [
        (
            RESOURCES,
            {"success": False, "code": 404, "message": "Client not found"},
            lambda c: RestreamReader(c).restream_resources("acme"),
            "restream",
            "Client not found",
        ),
        (
            CONFIGURATIONS,
            {"status": "ERROR", "message": "Invalid account"},
            lambda c: TalkingHeadReader(c).th_configurations("acme"),
            "talking_head",
            "Invalid account",
        ),
    ],
)
async def test_error_body_with_http_200_is_an_error(
    make_rig: MakeRig,
    platform: FakePlatform,
    path: str,
    body: dict[str, Any],
    call: Call,
    area: str,
    message: str,
) -> None:
    platform.on("GET", path, Answer(200, body))
    rig = make_rig()
    with pytest.raises(UpstreamError) as info:
        await call(rig.client)
    assert (info.value.kind, info.value.area, info.value.message) == ("error_body", area, message)


async def test_dvr_partial_deletion_names_the_failed_hosts(
    make_rig: MakeRig, platform: FakePlatform
) -> None:
    body = {
        "status": "Failed",
        "description": "Deletion failed",
        "failed_hosts": ["node-1", "node-3"],
    }
    platform.on("DELETE", DVR, Answer(500, body))
    rig = make_rig()
    reply = await rig.ops.send(
        DVR_DELETE, "acme", body={"host": "*", "all": True}, stream_name="live/main"
    )
    assert (reply.status, reply.data) == (500, body)
    assert len(platform.requests("DELETE", DVR)) == 1
    with pytest.raises(UpstreamError) as info:
        rig.client.checked("dvr", reply)
    assert info.value.failed_hosts == ["node-1", "node-3"]
    assert info.value.message == "Deletion failed (failed hosts: node-1, node-3)"
    assert info.value.status == 500


async def test_non_json_error_page_is_quoted(make_rig: MakeRig, platform: FakePlatform) -> None:
    platform.on("GET", DVR, Answer(502, text="<html>Bad Gateway</html>"))
    rig = make_rig(retries=0)
    with pytest.raises(UpstreamError) as info:
        await DvrReader(rig.client).dvr_stream("acme", "live/main")
    assert (info.value.status, info.value.message) == (502, "<html>Bad Gateway</html>")


# --- metrics ----------------------------------------------------------------------------------
async def test_requests_are_counted_and_timed_per_area(
    make_rig: MakeRig, platform: FakePlatform
) -> None:
    platform.on("GET", DVR, Answer(200, DVR_BODY))
    platform.on("GET", RESOURCES, Answer(404, {"success": False, "code": 404, "message": "no"}))
    rig = make_rig()
    await DvrReader(rig.client).dvr_stream("acme", "live/main")
    await DvrReader(rig.client).dvr_stream("acme", "live/main")
    with pytest.raises(UpstreamError):
        await RestreamReader(rig.client).restream_resources("acme")
    assert count(rig, "dvr", "200") == 2
    assert count(rig, "restream", "404") == 1
    hist = "cdnvideo_upstream_request_duration_seconds"
    assert rig.sample(f"{hist}_count", area="dvr") == 2
    assert rig.sample(f"{hist}_count", area="restream") == 1
    assert (rig.sample(f"{hist}_sum", area="dvr") or 0) > 0


# --- concurrency and paths --------------------------------------------------------------------
async def test_concurrency_limit_is_respected(make_rig: MakeRig, platform: FakePlatform) -> None:
    platform.on("GET", DVR, Answer(200, DVR_BODY, delay=0.05))
    rig = make_rig(max_concurrency=2)
    await asyncio.gather(*(DvrReader(rig.client).dvr_stream("acme", "live/main") for _ in range(6)))
    assert len(platform.requests("GET", DVR)) == 6
    assert platform.max_in_flight == 2


async def test_time_waiting_for_a_slot_is_not_upstream_latency(
    make_rig: MakeRig, platform: FakePlatform
) -> None:
    timer = StepTimer()
    platform.on("GET", DVR, Answer(200, DVR_BODY))
    platform.on_arrival = lambda: timer.advance(0.25)  # each request takes 0.25 s upstream
    rig = make_rig(max_concurrency=1, timer=timer)
    await asyncio.gather(*(DvrReader(rig.client).dvr_stream("acme", "live/main") for _ in range(3)))
    hist = "cdnvideo_upstream_request_duration_seconds"
    assert platform.max_in_flight == 1  # the second and third waited for the slot
    assert rig.sample(f"{hist}_sum", area="dvr") == 0.75  # not 0.25 + 0.5 + 0.75 s
    assert rig.sample(f"{hist}_bucket", area="dvr", le="0.25") == 3


@pytest.mark.parametrize(
    ("stream", "raw_path"),
    [
        ("live/main", "/app/dvr-net/v1/acme/streams/live/main"),
        ("news", "/app/dvr-net/v1/acme/streams/news"),
        ("a/b/c", "/app/dvr-net/v1/acme/streams/a/b/c"),
        ("my stream?x#y", "/app/dvr-net/v1/acme/streams/my%20stream%3Fx%23y"),
        ("50%", "/app/dvr-net/v1/acme/streams/50%25"),
    ],
)
async def test_stream_names_keep_their_slashes(
    make_rig: MakeRig, platform: FakePlatform, stream: str, raw_path: str
) -> None:
    platform.on("GET", raw_path, Answer(200, {"status": "Completed", "data": []}))
    rig = make_rig()
    assert await DvrReader(rig.client).dvr_stream("acme", stream) == []
    assert [s.path for s in platform.seen] == [raw_path]


@pytest.mark.parametrize("stream", ["live/../../other/streams/x", "./x", "live//main", "/live", ""])
async def test_unsafe_stream_names_are_refused_before_sending(
    make_rig: MakeRig, platform: FakePlatform, stream: str
) -> None:
    rig = make_rig()
    with pytest.raises(UpstreamError) as info:
        await rig.ops.send(DVR_DELETE, "acme", body={"host": "*", "all": True}, stream_name=stream)
    assert (info.value.kind, info.value.area) == ("invalid_request", "dvr")
    assert info.value.message == (
        f"{stream!r} is not a valid path segment (empty, '.' and '..' are refused)"
    )
    assert platform.seen == []


async def test_account_and_ids_are_quoted_as_one_segment(
    make_rig: MakeRig, platform: FakePlatform
) -> None:
    rig = make_rig()
    await rig.ops.send(RESTREAM_GET, "a b/c", resource_id="id/1")
    assert platform.seen[0].path == "/app/restream/v2/a%20b%2Fc/resources/id%2F1"
    with pytest.raises(UpstreamError, match="is not a valid path segment"):
        await rig.ops.send(TH_CANCEL, "acme", task_id="..")


async def test_base_url_with_a_path_prefix(make_rig: MakeRig, platform: FakePlatform) -> None:
    rig = make_rig(base_url=platform.url + "/reseller/api/")
    await rig.ops.send(TH_TASKS, "acme", params=[])
    assert platform.seen[0].path == "/reseller/api/app/th-api/v1/accounts/acme/tasks"


# --- typed reads --------------------------------------------------------------------------------
async def test_account_list_is_parsed(make_rig: MakeRig, platform: FakePlatform) -> None:
    platform.on(
        "GET",
        "/app/inventory/v1/accounts/",
        Answer(
            200, [{"status": "active", "utoken": "u", "uid": "1-1-abcdefgh", "name": "abcdefgh"}]
        ),
    )
    rig = make_rig()
    assert await rig.client.accounts() == [models.AccountInfo("abcdefgh", "active")]


async def test_traffic_asks_minute_windows_with_repeated_metrics(
    make_rig: MakeRig, platform: FakePlatform
) -> None:
    body = {
        "start": "2026-01-01T00:00:00",
        "end": "2026-01-01T00:01:00",
        "account": "acme",
        "metrics": ["edge_bandwidth"],
        "data": [
            {"resource": "r1", "resource_name": "site", "cname": "c.example", "edge_bandwidth": 8}
        ],
    }
    platform.on("GET", "/app/metrics/v1/resources", Answer(200, body))
    rig = make_rig()
    answer = await MetricsEndpoint(rig.client).traffic(
        "acme", 1767225600.9, 1767225659, True, metrics=("edge_bandwidth", "edge_requests_total")
    )
    reply = traffic_read.decoded(answer, True)
    assert platform.seen[0].query == [
        ("account", "acme"),
        ("start", "2026-01-01T00:00:00"),
        ("end", "2026-01-01T00:00:00"),
        ("metric", "edge_bandwidth"),
        ("metric", "edge_requests_total"),
    ]
    assert reply.rows == (MetricsRow({"edge_bandwidth": 8}, "r1", "site", "c.example"),)


async def test_a_large_per_resource_reply_is_decoded_and_checked_off_the_loop(
    make_rig: MakeRig, platform: FakePlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = [
        {"resource": f"r{i}", "resource_name": f"site{i}", "cname": "", "edge_requests_total": i}
        for i in range(2000)
    ]
    body = {"start": "", "end": "", "account": "acme", "metrics": [], "data": rows}
    platform.on("GET", "/app/metrics/v1/resources", Answer(200, body))
    threads: dict[str, int] = {}
    loads, parse = jsonpieces.loads, traffic_read.parse_metrics

    def spying_loads(raw: Any) -> Any:
        threads["loads"] = threading.get_ident()
        return loads(raw)

    def spying_parse(data: Any, per_resource: bool) -> MetricsReply:
        threads["parse_metrics"] = threading.get_ident()
        return parse(data, per_resource)

    monkeypatch.setattr(jsonpieces, "loads", spying_loads)
    monkeypatch.setattr(traffic_read, "parse_metrics", spying_parse)
    rig = make_rig()
    answer = await MetricsEndpoint(rig.client).traffic("acme", 1767225600, 1767225660, True)
    assert not answer.reply.decoded  # the loop got bytes: decoded by the read step
    reply = await on_worker(traffic_read.decoded, answer, True)
    assert len(json.dumps(body)) > client_module.DECODE_OFF_LOOP_BYTES
    assert set(threads) == {"loads", "parse_metrics"}
    assert threading.get_ident() not in threads.values()
    assert len(reply.rows) == 2000
    assert reply.rows[1999] == MetricsRow({"edge_requests_total": 1999}, "r1999", "site1999")


@pytest.mark.parametrize(
    "text",
    ["[" * 10 + "x" * 100_000, "[" * 100_000 + "]" * 100_000],
    ids=["not-json", "nested-too-deep"],
)
async def test_a_large_body_that_is_not_json_is_invalid_body(
    make_rig: MakeRig, platform: FakePlatform, text: str
) -> None:
    platform.on("GET", DVR, Answer(200, text=text))
    rig = make_rig()
    with pytest.raises(UpstreamError) as info:
        await DvrReader(rig.client).dvr_stream("acme", "live/main")
    assert (info.value.kind, info.value.message) == ("invalid_body", "reply is not JSON")
    assert count(rig, "dvr", "invalid_body") == 1


async def test_restream_reads_are_parsed(make_rig: MakeRig, platform: FakePlatform) -> None:
    resource = {
        "resource_id": "42",
        "name": "main",
        "type": "short",
        "active": True,
        "creation_ts": 1,
        "modification_ts": 2,
        "restreams": [
            {
                "schedule": [{"start": "2026-01-01T00:00:00Z", "stop": "2026-01-01T01:00:00Z"}],
                "source": "rtmp://src/live",
                "transcoded": False,
                "transcode_quality": "",
                "target_type": "customRTMP",
                "target_url": "rtmp://yt/live",
                "target_key": "k",
                "login": "",
                "password": "",
                "backup": {},
            }
        ],
    }
    platform.on(
        "GET", RESOURCES, Answer(200, {"account": "acme", "data": {"resources": [resource]}})
    )
    platform.on(
        "GET",
        RESOURCES + "/42",
        Answer(
            200, {"account": "acme", "resource_id": "42", "data": {**resource, "resource_id": None}}
        ),
    )
    platform.on(
        "GET",
        "/app/restream/v2/acme/status",
        Answer(
            200,
            {
                "account": "acme",
                "data": [
                    {
                        "resource_id": "42",
                        "status": [
                            {
                                "status": {"code": 0, "description": "OK"},
                                "source": "rtmp://src/live",
                                "target_url": "rtmp://yt/live",
                                "target_key": "k",
                            }
                        ],
                    }
                ],
            },
        ),
    )
    platform.on(
        "GET",
        "/app/restream/v2/acme/history",
        Answer(
            200,
            {
                "account": "acme",
                "data": [
                    {
                        "source": "rtmp://src/live",
                        "history": {
                            "rtmp://yt/live": {"k": [{"code": 2, "description": "x", "time": 5}]}
                        },
                    }
                ],
            },
        ),
    )
    rig = make_rig()
    (listed,) = await RestreamReader(rig.client).restream_resources("acme")
    assert (listed.resource_id, listed.type, listed.active) == ("42", "short", True)
    assert listed.restreams[0].schedule[0].stop == "2026-01-01T01:00:00Z"
    single = await RestreamReader(rig.client).restream_resource("acme", "42")
    assert single.resource_id == "42"
    (record,) = await RestreamReader(rig.client).restream_status("acme", "42")
    assert record.targets[0].code == 0
    (point,) = await RestreamReader(rig.client).restream_history(
        "acme", "42", "2026-01-01T00:00:00Z", "2026-01-01T01:00:00Z"
    )
    assert (point.target_url, point.target_key, point.code, point.time) == (
        "rtmp://yt/live",
        "k",
        2,
        5.0,
    )
    queries = [s.query for s in platform.seen]
    assert queries[2] == [("resource_id", "42")]
    assert queries[3] == [
        ("resource_id", "42"),
        ("start", "2026-01-01T00:00:00Z"),
        ("end", "2026-01-01T01:00:00Z"),
    ]


async def test_dvr_and_talking_head_reads_are_parsed(
    make_rig: MakeRig, platform: FakePlatform
) -> None:
    platform.on("GET", DVR, Answer(200, DVR_BODY))
    platform.on(
        "GET",
        CONFIGURATIONS,
        Answer(
            200,
            {
                "status": "ok",
                "voices": {"Alena": {"language": "ru-RU"}},
                "models": {"Natalia": {"1.0.0": {}, "1.1.0": {}}},
                "quota": {"limit": 1500, "left": 1200},
                "watermark": True,
            },
        ),
    )
    platform.on(
        "GET",
        "/app/th-api/v1/accounts/acme/status/t-1",
        Answer(200, {"status": "ok", "task": {"id": "t-1", "status": "PROCESSED", "attempts": 1}}),
    )
    rig = make_rig()
    (node,) = await DvrReader(rig.client).dvr_stream("acme", "live/main")
    assert node == dvr_reply.DvrNode(
        "live/main",
        "node-1",
        True,
        True,
        3600,
        1200,
        1767225000,
        (dvr_reply.DvrRange(1767225000, 1200),),
    )
    conf = await TalkingHeadReader(rig.client).th_configurations("acme")
    assert (conf.quota_limit, conf.quota_left, conf.watermark, conf.model_count) == (
        1500,
        1200,
        True,
        2,
    )
    task = await TalkingHeadReader(rig.client).th_status("acme", "t-1")
    assert (task.id, task.status) == ("t-1", "processed")


# --- operations pass through exactly ----------------------------------------------------------
OpCall = Callable[[Operations], Awaitable[Any]]
TH = "/app/th-api/v1/accounts/acme"


@pytest.mark.parametrize(
    ("call", "method", "path", "query", "body"),
    [
        (lambda o: o.send(RESTREAM_LIST, "acme"), "GET", RESOURCES, [], None),
        (
            lambda o: o.send(RESTREAM_GET, "acme", resource_id="42"),
            "GET",
            RESOURCES + "/42",
            [],
            None,
        ),
        (
            lambda o: o.send(RESTREAM_CREATE, "acme", body={"name": "n", "active": True}),
            "POST",
            RESOURCES,
            [],
            {"name": "n", "active": True},
        ),
        (
            lambda o: o.send(RESTREAM_UPDATE, "acme", body={"name": "m"}, resource_id="42"),
            "PUT",
            RESOURCES + "/42",
            [],
            {"name": "m"},
        ),
        (
            lambda o: o.send(RESTREAM_STATUS, "acme"),
            "GET",
            "/app/restream/v2/acme/status",
            [],
            None,
        ),
        (
            lambda o: o.send(RESTREAM_STATUS, "acme", params={"resource_id": "42"}),
            "GET",
            "/app/restream/v2/acme/status",
            [("resource_id", "42")],
            None,
        ),
        (
            lambda o: o.send(
                RESTREAM_HISTORY,
                "acme",
                params={
                    "resource_id": "42",
                    "start": "2026-01-01T00:00:00Z",
                    "end": "2026-01-02T00:00:00Z",
                },
            ),
            "GET",
            "/app/restream/v2/acme/history",
            [
                ("resource_id", "42"),
                ("start", "2026-01-01T00:00:00Z"),
                ("end", "2026-01-02T00:00:00Z"),
            ],
            None,
        ),
        (lambda o: o.send(DVR_GET, "acme", stream_name="live/main"), "GET", DVR, [], None),
        (
            lambda o: o.send(
                DVR_DELETE,
                "acme",
                body={"host": "*", "from_ts": 1, "to_ts": 2},
                stream_name="live/main",
            ),
            "DELETE",
            DVR,
            [],
            {"host": "*", "from_ts": 1, "to_ts": 2},
        ),
        (lambda o: o.send(TH_CONFIGURATIONS, "acme"), "GET", CONFIGURATIONS, [], None),
        (
            lambda o: o.send(TH_GENERATE, "acme", body={"script": "hi", "voice": "Alena"}),
            "POST",
            TH + "/generate",
            [],
            {"script": "hi", "voice": "Alena"},
        ),
        (lambda o: o.send(TH_STATUS, "acme", task_id="t-1"), "GET", TH + "/status/t-1", [], None),
        (
            lambda o: o.send(TH_CANCEL, "acme", task_id="t-1"),
            "DELETE",
            TH + "/cancel/t-1",
            [],
            None,
        ),
        (
            lambda o: o.send(TH_VIDEO_LINK, "acme", task_id="t-1"),
            "GET",
            TH + "/video/t-1",
            [],
            None,
        ),
        (
            lambda o: o.send(TH_RENAME, "acme", body={"video_name": "new"}, task_id="t-1"),
            "PATCH",
            TH + "/video/t-1",
            [],
            {"video_name": "new"},
        ),
        (lambda o: o.send(TH_DELETE, "acme", task_id="t-1"), "DELETE", TH + "/video/t-1", [], None),
        (
            lambda o: o.send(TH_TASKS, "acme", params=[("limit", "10"), ("sort", "-duration")]),
            "GET",
            TH + "/tasks",
            [("limit", "10"), ("sort", "-duration")],
            None,
        ),
    ],
)
async def test_operation_sends_exactly_the_expected_request(
    make_rig: MakeRig,
    platform: FakePlatform,
    call: OpCall,
    method: str,
    path: str,
    query: list[tuple[str, str]],
    body: Any,
) -> None:
    platform.on(method, path, Answer(200, {"status": "ok", "echo": True}))
    rig = make_rig()
    reply = await call(rig.ops)
    assert (reply.status, reply.data) == (200, {"status": "ok", "echo": True})
    (seen,) = platform.seen
    assert (seen.method, seen.path, seen.query, seen.json()) == (method, path, query, body)
    assert seen.headers["CDN-AUTH-TOKEN"] == "static-token-abc"
    if body is not None:
        assert seen.headers["Content-Type"] == "application/json"


async def test_operation_returns_error_replies_unchanged(
    make_rig: MakeRig, platform: FakePlatform
) -> None:
    body = {"status": "ERROR", "message": "Task status is wrong: canceled"}
    platform.on("DELETE", TH + "/cancel/t-1", Answer(400, body))
    rig = make_rig()
    reply = await rig.ops.send(TH_CANCEL, "acme", task_id="t-1")
    assert (reply.status, reply.data, reply.ok) == (400, body, False)
    assert reply.content_type.startswith("application/json")


async def test_deadline_covers_every_attempt_and_the_longest_back_off(make_rig: MakeRig) -> None:
    # 3 attempts of 10 s, back-off steps 0.01 and 0.02 s at 1.5x (bounded by 0.01 x 2^2 x 1.5)
    assert make_rig(retries=2, timeout_seconds=10).client.deadline() == pytest.approx(31.06)
    assert make_rig(retries=0, timeout_seconds=4).client.deadline() == pytest.approx(5.015)


async def test_restream_lists_are_checked_and_built_off_the_loop(
    make_rig: MakeRig, platform: FakePlatform, monkeypatch: pytest.MonkeyPatch
) -> None:
    resources = [
        {"resource_id": str(i), "name": f"r{i}", "type": "short", "active": True, "restreams": []}
        for i in range(50)
    ]
    target = {"target_url": "rtmp://t.example/live", "status": {"code": 0, "description": "OK"}}
    status = [{"resource_id": "1", "status": [target]}]
    platform.on(
        "GET", "/app/restream/v2/acme/resources", Answer(200, {"data": {"resources": resources}})
    )
    platform.on("GET", "/app/restream/v2/acme/status", Answer(200, {"data": status}))
    threads: dict[str, int] = {}
    parse_resources, parse_status = (
        restream_reply.parse_restream_resources,
        restream_reply.parse_restream_status,
    )

    def spying_resources(data: Any) -> list[restream_reply.RestreamResource]:
        threads["resources"] = threading.get_ident()
        return parse_resources(data)

    def spying_status(data: Any) -> list[restream_reply.StatusRecord]:
        threads["status"] = threading.get_ident()
        return parse_status(data)

    monkeypatch.setattr(restream_reply, "parse_restream_resources", spying_resources)
    monkeypatch.setattr(restream_reply, "parse_restream_status", spying_status)
    rig = make_rig()
    got = await RestreamReader(rig.client).restream_resources("acme")
    (record,) = await RestreamReader(rig.client).restream_status("acme")
    assert set(threads) == {"resources", "status"}
    assert record.targets[0].code == 0
    assert threading.get_ident() not in threads.values()
    assert [r.resource_id for r in got] == [str(i) for i in range(50)]
