"""The exporter's own HTTP server counted: every route by its template and status, refusals
included, unknown paths under one label (issue 51, point 1)."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import bcrypt
import pytest
import yaml
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from prometheus_client import CollectorRegistry, Counter, Histogram

from exporter.runtime.context import Context
from exporter.web.app import init_app
from exporter.web.httpmetrics import UNMATCHED, http_metrics
from exporter.web.lifecycle import add_lifecycle_off_route
from exporter.web.webconfig import load_web_config
from tests.rig.table import READ_TOKEN, WRITE_TOKEN
from tests.web.admin.conftest import make_app, make_context, make_service

STATUS = "/api/v1/restream/{account}/status"


def requests(ctx: Context, handler: str, code: str) -> float | None:
    return ctx.metrics.registry.get_sample_value(
        "cdnvideo_exporter_http_requests_total", {"handler": handler, "code": code}
    )


@pytest.fixture
async def served() -> AsyncIterator[tuple[TestClient[Any, Any], Context]]:
    """The daemon's web app with the admin API on and the lifecycle off, its platform
    unreachable (port 9)."""
    async with aiohttp.ClientSession() as session:
        ctx = make_context("http://127.0.0.1:9", session, auth_failures_per_minute=2)
        app = make_app(ctx)[0]
        add_lifecycle_off_route(app)  # as create_app adds it without --web.enable-lifecycle
        client: TestClient[Any, Any] = TestClient(TestServer(app))
        await client.start_server()
        try:
            yield client, ctx
        finally:
            await client.close()


async def test_refused_admin_requests_are_counted_by_route_template(
    served: tuple[TestClient[Any, Any], Context],
) -> None:
    client, ctx = served
    assert requests(ctx, STATUS, "401") == 0  # exposed before the first refusal
    for account in ("demo-media", "demo-shop", "demo-media"):  # two failures allowed, then 429
        assert (await client.get(f"/api/v1/restream/{account}/status")).status in (401, 429)
    delete = "/api/v1/talking-head/demo-media/video/t-1"
    read = {"Authorization": f"Bearer {READ_TOKEN}"}
    assert (await client.delete(delete, headers=read)).status == 403
    assert requests(ctx, STATUS, "401") == 2
    assert requests(ctx, STATUS, "429") == 1
    assert requests(ctx, "/api/v1/talking-head/{account}/video/{task_id}", "403") == 1
    labels = {
        s.labels["handler"]
        for m in ctx.metrics.registry.collect()
        for s in m.samples
        if s.name == "cdnvideo_exporter_http_requests_total"
    }
    assert not any("demo-" in label for label in labels)  # never a raw path


async def test_a_stream_name_with_slashes_is_counted_under_its_template(
    served: tuple[TestClient[Any, Any], Context],
) -> None:
    client, ctx = served
    write = {"Authorization": f"Bearer {WRITE_TOKEN}"}
    await client.get("/api/v1/dvr/nobody/streams/live/main", headers=write)  # unknown account
    assert requests(ctx, "/api/v1/dvr/{account}/streams/{stream_name}", "404") == 1


async def test_unknown_paths_share_one_label_and_known_routes_keep_theirs(
    served: tuple[TestClient[Any, Any], Context],
) -> None:
    client, ctx = served
    for path in ("/wp-login.php", "/api/v1/nothing/here", "/metrics/../../etc/passwd"):
        assert (await client.get(path)).status == 404
    assert (await client.post("/healthz")).status == 405
    assert (await client.get("/metrics")).status == 200
    assert (await client.get("/healthz")).status == 200
    assert (await client.post("/-/reload")).status == 403  # the lifecycle is off
    assert requests(ctx, UNMATCHED, "404") == 3
    assert requests(ctx, UNMATCHED, "405") == 1
    assert requests(ctx, "/metrics", "200") == 1
    assert requests(ctx, "/healthz", "200") == 1
    assert requests(ctx, "/-/reload", "403") == 1
    count = ctx.metrics.registry.get_sample_value(
        "cdnvideo_exporter_http_request_duration_seconds_count", {"handler": UNMATCHED}
    )
    assert count == 4


async def test_the_duration_is_the_handlers_time_and_a_failure_counts_as_500() -> None:
    registry = CollectorRegistry()
    counted = Counter("t_requests", "t", ["handler", "code"], registry=registry)
    seconds = Histogram("t_seconds", "t", ["handler"], buckets=(1, 5), registry=registry)
    now = [100.0]

    async def slow(request: web.Request) -> web.Response:
        now[0] += 3.0
        return web.Response(text="ok")

    async def broken(request: web.Request) -> web.Response:
        raise RuntimeError("bug")

    app = web.Application(middlewares=[http_metrics(counted, seconds, timer=lambda: now[0])])
    app.router.add_get("/slow/{name}", slow)
    app.router.add_get("/broken", broken)
    async with TestClient(TestServer(app)) as client:
        assert (await client.get("/slow/x")).status == 200
        assert (await client.get("/broken")).status == 500
    value = registry.get_sample_value
    assert value("t_seconds_sum", {"handler": "/slow/{name}"}) == 3.0
    assert value("t_seconds_bucket", {"handler": "/slow/{name}", "le": "1.0"}) == 0
    assert value("t_seconds_bucket", {"handler": "/slow/{name}", "le": "5.0"}) == 1
    assert value("t_requests_total", {"handler": "/broken", "code": "500"}) == 1


async def test_refusals_of_the_web_configs_basic_auth_are_counted(tmp_path: Path) -> None:
    hashed = bcrypt.hashpw(b"right", bcrypt.gensalt(4)).decode()
    path = tmp_path / "web.yml"
    path.write_text(yaml.safe_dump({"basic_auth_users": {"prometheus": hashed}}))
    async with aiohttp.ClientSession() as session:
        ctx = make_context("http://127.0.0.1:9", session)
        service = make_service(ctx)
        app = init_app(ctx, service.areas, load_web_config(str(path)))
        async with TestClient(TestServer(app)) as client:
            assert (await client.get("/metrics")).status == 401
            good = {"Authorization": "Basic " + base64.b64encode(b"prometheus:right").decode()}
            assert (await client.get("/metrics", headers=good)).status == 200
    assert requests(ctx, "/metrics", "401") == 1
    assert requests(ctx, "/metrics", "200") == 1
