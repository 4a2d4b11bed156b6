"""Fixtures: a Context against a fake platform, and the daemon's web app built around it the
way the daemon builds it (Service, areas, init_app), with the admin API at /api/v1."""

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
from exporter.runtime.areas import Areas
from exporter.runtime.context import Context
from exporter.runtime.scheduler import Scheduler
from exporter.runtime.selfmetrics import SelfMetrics
from exporter.runtime.service import Service
from exporter.support.clock import FakeClock
from exporter.support.logs import Redactor
from exporter.talking_head.tasks import TaskTracker
from exporter.web.admin import ADMIN_STATE
from exporter.web.app import ADMIN_API, init_app
from tests.rig.client import connect
from tests.rig.table import (
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
    **admin: Any,
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
                **admin,
            },
        },
        env={},
    )
    clock = clock or FakeClock()
    metrics = SelfMetrics()
    redactor = Redactor(settings.secrets())
    parts = connect(
        session,
        settings.upstream,
        clock,
        metrics=metrics,
        redactor=redactor,
        retries=0,
        backoff_seconds=0.01,
    )
    return Context(
        settings=settings,
        clock=clock,
        store=Store(clock),
        metrics=metrics,
        runner=parts.runner,
        client=parts.client,
        ops=parts.ops,
        redactor=redactor,
        accounts=ACCOUNTS,
    )


def make_service(ctx: Context) -> Service:
    """The daemon's Service around ``ctx``, not started: tests run polls and the task tracker
    (``poll_due`` on a fake clock) by hand."""
    return Service(ctx, Scheduler(ctx.runner, ctx.clock))


def make_app(ctx: Context) -> tuple[web.Application, Service]:
    """The daemon's web app (as create_app builds it) and its Service."""
    service = make_service(ctx)
    return init_app(ctx, service.areas), service


async def settle(app: web.Application | None) -> None:
    """Wait until the admin API of ``app`` (the daemon's web app) has no background work
    left (the quota refresh after an accepted generate)."""
    assert app is not None
    background = app[ADMIN_API][ADMIN_STATE].background
    while background:
        await asyncio.gather(*background, return_exceptions=True)


def served_document(accounts: tuple[str, ...] | None = None) -> dict[str, Any]:
    """The OpenAPI document as the admin app serves it (optionally for other accounts)."""

    async def fetch() -> dict[str, Any]:
        async with aiohttp.ClientSession() as session:
            ctx = make_context("http://127.0.0.1:9", session)
            if accounts is not None:
                ctx.accounts = accounts
            client = TestClient(TestServer(make_app(ctx)[0]))
            await client.start_server()
            try:
                resp = await client.get("/api/v1/openapi.json")
                assert resp.status == 200
                return dict(await resp.json())
            finally:
                await client.close()

    return asyncio.run(fetch())


@dataclass
class Admin:
    """The admin API under test, its fake platform, its context and the daemon's Service."""

    client: TestClient[Any, Any]
    upstream: FakeUpstream
    ctx: Context
    clock: FakeClock
    service: Service

    @property
    def areas(self) -> Areas:
        return self.service.areas

    async def settle(self) -> None:
        """Wait for the admin surface's background work (the quota refresh after a generate)."""
        await settle(self.client.app)

    @property
    def tracker(self) -> TaskTracker:
        """The one task tracker: the talking-head area's, which the Service runs."""
        return self.service.areas.talking_head.tracker

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
        app, service = make_app(ctx)
        client: TestClient[Any, Any] = TestClient(TestServer(app))
        await client.start_server()
        closers.append(client.close)
        return Admin(client, upstream, ctx, clock, service)

    yield make
    for close in reversed(closers):
        await close()


@pytest.fixture
async def admin(make_admin: MakeAdmin) -> Admin:
    return await make_admin()
