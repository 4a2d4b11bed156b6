"""Fixtures: a Context against a fake platform, and the admin app mounted at /api/v1."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from exporter.config import parse_config
from exporter.exposition import Store
from exporter.runtime.context import Context
from exporter.runtime.polling import PollRunner
from exporter.runtime.selfmetrics import SelfMetrics
from exporter.support.clock import FakeClock
from exporter.support.logs import Redactor
from exporter.talking_head.tasks import TaskTracker
from exporter.upstream import Operations, UpstreamClient
from exporter.web.admin import admin_app

from .fakes import (
    ACCOUNTS,
    READ_TOKEN,
    UPSTREAM_TOKEN,
    WRITE_TOKEN,
    FakeUpstream,
)


def make_context(
    base_url: str,
    session: aiohttp.ClientSession,
    clock: FakeClock | None = None,
    timeout: float = 2.0,
    token: str = UPSTREAM_TOKEN,
    admin_enabled: bool = True,
    auth_failures_per_minute: int = 10,
) -> Context:
    settings = parse_config(
        {
            "upstream": {"base_url": base_url, "token": token, "timeout_seconds": timeout},
            "accounts": list(ACCOUNTS),
            "admin": {
                "enabled": admin_enabled,
                "read_token": READ_TOKEN,
                "write_token": WRITE_TOKEN,
                "auth_failures_per_minute": auth_failures_per_minute,
            },
        },
        env={},
    )
    clock = clock or FakeClock()
    metrics = SelfMetrics()
    redactor = Redactor(settings.secrets())
    client = UpstreamClient(
        session, settings.upstream, metrics, clock, redactor, retries=0, backoff_seconds=0.01
    )
    ctx = Context(
        settings=settings,
        clock=clock,
        store=Store(clock),
        metrics=metrics,
        runner=PollRunner(metrics, clock),
        client=client,
        ops=Operations(client),
        redactor=redactor,
        accounts=ACCOUNTS,
    )
    # Tests drive the tracker by hand (poll_due on a fake clock), so none runs in background.
    ctx.extras["task_tracker"] = TaskTracker(ctx)
    return ctx


def served_document(accounts: tuple[str, ...] | None = None) -> dict[str, Any]:
    """The OpenAPI document as the admin app serves it (optionally for other accounts)."""

    async def fetch() -> dict[str, Any]:
        async with aiohttp.ClientSession() as session:
            ctx = make_context("http://127.0.0.1:9", session)
            if accounts is not None:
                ctx.accounts = accounts
            client = TestClient(TestServer(admin_app(ctx)))
            await client.start_server()
            try:
                resp = await client.get("/openapi.json")
                assert resp.status == 200
                return dict(await resp.json())
            finally:
                await client.close()

    return asyncio.run(fetch())


@dataclass
class Admin:
    """The admin API under test, its fake platform and its context."""

    client: TestClient[Any, Any]
    upstream: FakeUpstream
    ctx: Context
    clock: FakeClock

    async def call(
        self,
        method: str,
        path: str,
        token: str | None = WRITE_TOKEN,
        **kw: Any,
    ) -> tuple[int, Any, aiohttp.ClientResponse]:
        headers = dict(kw.pop("headers", {}))
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        resp = await self.client.request(method, "/api/v1" + path, headers=headers, **kw)
        text = await resp.text()
        try:
            import json

            data = json.loads(text) if text else None
        except ValueError:
            data = text
        return resp.status, data, resp


MakeAdmin = Callable[..., Awaitable[Admin]]


@pytest.fixture
async def make_admin() -> AsyncIterator[MakeAdmin]:
    closers: list[Callable[[], Awaitable[None]]] = []

    async def make(
        upstream: FakeUpstream | None = None,
        base_url: str | None = None,
        **ctx_kw: Any,
    ) -> Admin:
        upstream = upstream or FakeUpstream()
        if base_url is None:
            server = TestServer(upstream.app())
            await server.start_server()
            closers.append(server.close)
            base_url = str(server.make_url("")).rstrip("/")
        session = aiohttp.ClientSession()
        closers.append(session.close)
        clock = ctx_kw.pop("clock", None) or FakeClock()
        ctx = make_context(base_url, session, clock=clock, **ctx_kw)
        root = web.Application()
        root.add_subapp("/api/v1", admin_app(ctx))
        client: TestClient[Any, Any] = TestClient(TestServer(root))
        await client.start_server()
        closers.append(client.close)
        return Admin(client, upstream, ctx, clock)

    yield make
    for close in reversed(closers):
        await close()


@pytest.fixture
async def admin(make_admin: MakeAdmin) -> Admin:
    return await make_admin()
