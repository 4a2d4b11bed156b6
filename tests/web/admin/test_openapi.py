"""The OpenAPI document is generated from the registered routes and stays true under fuzzing."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote, urlencode

import aiohttp
import jsonschema
import pytest
from aiohttp.test_utils import TestClient, TestServer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from exporter.support.clock import FakeClock
from exporter.web.admin import admin_app
from exporter.web.admin.openapi import OWN_STATUSES
from exporter.web.app import admin_deps
from tests.rig.table import READ_TOKEN, WRITE_TOKEN, FakeUpstream

from .conftest import make_app, make_context, make_service, served_document, settle

DOC = served_document()


def operations(doc: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in doc["paths"].items():
        for method, op in item.items():
            yield path, method.upper(), op


def test_document_lists_exactly_the_registered_routes() -> None:
    async def registered() -> set[tuple[str, str]]:
        async with aiohttp.ClientSession() as session:
            ctx = make_context("http://127.0.0.1:9", session)
            app = admin_app(ctx, admin_deps(make_service(ctx).areas))
            return {
                (r.method, r.resource.canonical)
                for r in app.router.routes()
                if r.method != "HEAD" and r.resource is not None
            }

    documented = {(m, p) for p, m, _ in operations(DOC)}
    assert documented == asyncio.run(registered())


def test_document_is_self_consistent() -> None:
    assert DOC["openapi"] == "3.1.0"
    ids = [op["operationId"] for _, _, op in operations(DOC)]
    assert len(ids) == len(set(ids))
    for schema in DOC["components"]["schemas"].values():
        jsonschema.Draft202012Validator.check_schema(schema)  # raises, naming the problem
    refs = re.findall(r'"\$ref": "#/components/schemas/(\w+)"', json.dumps(DOC))
    assert refs
    assert set(refs) <= set(DOC["components"]["schemas"])
    for path, _, op in operations(DOC):
        in_path = set(re.findall(r"\{(\w+)\}", path))
        declared = {p["name"] for p in op.get("parameters", []) if p["in"] == "path"}
        assert in_path == declared, path


def test_the_product_routes_are_all_there() -> None:
    expected = {
        ("GET", "/restream/{account}/resources"),
        ("POST", "/restream/{account}/resources"),
        ("GET", "/restream/{account}/resources/{resource_id}"),
        ("PUT", "/restream/{account}/resources/{resource_id}"),
        ("GET", "/restream/{account}/status"),
        ("GET", "/restream/{account}/history"),
        ("GET", "/dvr/{account}/streams/{stream_name}"),
        ("DELETE", "/dvr/{account}/streams/{stream_name}"),
        ("GET", "/talking-head/{account}/configurations"),
        ("POST", "/talking-head/{account}/generate"),
        ("GET", "/talking-head/{account}/status/{task_id}"),
        ("DELETE", "/talking-head/{account}/cancel/{task_id}"),
        ("GET", "/talking-head/{account}/video/{task_id}"),
        ("PATCH", "/talking-head/{account}/video/{task_id}"),
        ("DELETE", "/talking-head/{account}/video/{task_id}"),
        ("GET", "/talking-head/{account}/tasks"),
        ("GET", "/openapi.json"),
    }
    assert {(m, p) for p, m, _ in operations(DOC)} == expected


# --- fuzzing ------------------------------------------------------------------------------
TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=12,
)


def resolve(schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = DOC["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
    return schema


@st.composite
def from_schema(draw: st.DrawFn, schema: dict[str, Any], depth: int = 0) -> Any:
    """Mostly-valid values for a schema, with random mutations to probe the edges."""
    schema = resolve(schema)
    if (depth and draw(st.integers(0, 24)) == 0) or depth > 4:
        return draw(JSON)
    if "oneOf" in schema and "type" not in schema:
        return draw(from_schema(draw(st.sampled_from(schema["oneOf"])), depth + 1))
    if "enum" in schema:
        return draw(st.sampled_from(schema["enum"]))
    if "const" in schema:
        return schema["const"]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = draw(st.sampled_from(kind))
    if kind == "object" or "properties" in schema:
        props = schema.get("properties", {})
        required = set(schema.get("required", []))
        out = {}
        for name, sub in props.items():
            if name in required or draw(st.booleans()):
                out[name] = draw(from_schema(sub, depth + 1))
        if draw(st.integers(0, 12)) == 0:
            out[draw(TEXT)] = draw(JSON)
        return out
    if kind == "array":
        return draw(st.lists(from_schema(schema.get("items", {}), depth + 1), max_size=3))
    if kind == "string":
        if "pattern" in schema:
            return draw(st.from_regex(schema["pattern"], fullmatch=True))
        return draw(st.text(max_size=schema.get("maxLength", 40) + 2))
    if kind == "integer":
        return draw(st.integers(-10, 2_000_000_000))
    if kind == "number":
        return draw(st.floats(-2, 2, allow_nan=False) | st.integers(-2, 2))
    if kind == "boolean":
        return draw(st.booleans())
    return draw(JSON)


QUERY_VALUES = st.one_of(
    TEXT,
    st.sampled_from(
        [
            "r1",
            "2026-01-01T00:00:00Z",
            "2026-01-01T01:00:00Z",
            "2026-01-01T00:00:00+00:00",
            "-duration",
            "+date",
            "video_name,script",
            "0",
            "20",
        ]
    ),
)


def weighted(common: st.SearchStrategy[Any], rare: st.SearchStrategy[Any], n: int) -> Any:
    """``common`` about n times as often as ``rare``."""
    return st.integers(0, n).flatmap(lambda i: rare if i == 0 else common)


@st.composite
def requests(draw: st.DrawFn) -> tuple[str, str, dict[str, Any], dict[str, Any]]:
    ops = [(p, m, op) for p, m, op in operations(DOC) if p != "/openapi.json"]
    path, method, op = draw(st.sampled_from(ops))
    url = path
    query: list[tuple[str, str]] = []
    for param in op.get("parameters", []):
        if param["in"] == "path":
            if param["name"] == "account":
                value = draw(weighted(st.sampled_from(["demo-media", "demo-shop"]), TEXT, 9))
                encoded = quote(value, safe="")
            elif param["name"] == "stream_name":
                value = draw(weighted(st.sampled_from(["live/main", "news"]), TEXT, 3))
                encoded = quote(value, safe="/")
            else:
                value = draw(weighted(st.sampled_from(["r1", "task-1"]), TEXT, 3))
                encoded = quote(value, safe="")
            url = url.replace("{" + param["name"] + "}", encoded or "x")
        elif param.get("required") or draw(st.booleans()):
            query.append((param["name"], draw(QUERY_VALUES)))
    if draw(st.integers(0, 8)) == 0:
        query.append((draw(TEXT), draw(TEXT)))
    if query:
        url += "?" + urlencode(query)
    token = draw(st.sampled_from([WRITE_TOKEN] * 12 + [READ_TOKEN, READ_TOKEN, None, "x"]))
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    kw: dict[str, Any] = {"headers": headers}
    body = op.get("requestBody")
    if body is not None:
        schema = body["content"]["application/json"]["schema"]
        choice = draw(st.integers(0, 5))
        if choice == 0:
            kw["data"] = draw(st.binary(max_size=40))
        elif choice == 1:
            kw["json"] = draw(JSON)
        else:
            kw["json"] = draw(from_schema(schema))
    return method, url, kw, op


ERROR_SCHEMA = {"$ref": "#/components/schemas/Error", "components": DOC["components"]}


@pytest.fixture
def fuzz_env() -> Iterator[tuple[asyncio.AbstractEventLoop, TestClient[Any, Any], FakeUpstream]]:
    loop = asyncio.new_event_loop()
    upstream = FakeUpstream()
    clock = FakeClock()

    async def start() -> tuple[TestClient[Any, Any], list[Any]]:
        server = TestServer(upstream.app())
        await server.start_server()
        session = aiohttp.ClientSession()
        ctx = make_context(str(server.make_url("")).rstrip("/"), session, clock=clock)
        client: TestClient[Any, Any] = TestClient(TestServer(make_app(ctx)[0]))
        await client.start_server()
        return client, [client.close, session.close, server.close]

    client, closers = loop.run_until_complete(start())
    client.clock = clock  # type: ignore[attr-defined]
    try:
        yield loop, client, upstream
    finally:
        for close in closers:
            loop.run_until_complete(close())
        loop.close()


def test_fuzzed_requests_never_get_a_5xx_and_match_the_document(
    fuzz_env: tuple[asyncio.AbstractEventLoop, TestClient[Any, Any], FakeUpstream],
) -> None:
    loop, client, upstream = fuzz_env

    async def send(method: str, url: str, kw: dict[str, Any]) -> tuple[int, Any, Any]:
        resp = await client.request(method, "/api/v1" + url, **kw)
        raw = await resp.read()
        return resp.status, raw, resp.headers

    @settings(
        max_examples=500,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    @given(requests())
    def check(req: tuple[str, str, dict[str, Any], dict[str, Any]]) -> None:
        method, url, kw, op = req
        client.clock.advance(7)  # type: ignore[attr-defined]
        loop.run_until_complete(settle(client.app))  # the last generate's quota refresh
        before = len(upstream.requests)
        status, raw, headers = loop.run_until_complete(send(method, url, kw))
        assert status < 500, (method, url, kw, raw)
        if "X-Upstream-Status" in headers:
            assert status == int(headers["X-Upstream-Status"])
            assert str(status) in op["responses"] or "default" in op["responses"]
            return
        # Our own answer: documented, shaped like Error, and nothing went upstream.
        assert status != 404 or raw, (method, url)
        if status == 404 and b'"error"' not in raw:
            # aiohttp's own 404 for a path no route matches (e.g. an empty segment).
            assert len(upstream.requests) == before
            return
        assert str(status) in op["responses"], (status, method, url)
        assert status in OWN_STATUSES
        body = json.loads(raw)
        jsonschema.validate(body, ERROR_SCHEMA)
        if status in (400, 422):
            assert body["fields"], body
        assert len(upstream.requests) == before, (method, url, kw)

    check()


def test_the_document_states_the_platforms_static_rules() -> None:
    schemas = DOC["components"]["schemas"]
    resource = schemas["RestreamResource"]
    assert resource["required"] == ["name", "type", "active", "restreams"]
    assert resource["properties"]["name"]["minLength"] == 1
    ops = {op["operationId"]: op for _, _, op in operations(DOC)}
    sort = next(p for p in ops["th_tasks"]["parameters"] if p["name"] == "sort")["schema"]
    assert "-duration" in sort["enum"]
    assert not [v for v in sort["enum"] if v.lstrip("+-") == "circle"]  # not sortable
    assert any("at most 31 days" in rule for rule in ops["restream_history"]["x-rules"])
    assert ops["th_cancel"]["x-rules"]
    assert ops["th_video_link"]["x-rules"]
