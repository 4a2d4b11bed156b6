"""/readyz tells the truth about accounts the platform does not know (real simulator, HTTP)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from aiohttp.test_utils import TestClient, TestServer
from structlog.testing import capture_logs

from exporter.config import parse_config
from exporter.simulator import SimConfig, Simulator, serve
from exporter.support.clock import FakeClock
from exporter.web.daemon import SERVICE, create_app

T0 = 1_767_225_600 + 17 * 3600 + 5
Ready = Callable[[], Awaitable[tuple[int, dict[str, Any]]]]


@asynccontextmanager
async def polled(accounts: list[Any], token: str = "") -> AsyncIterator[tuple[Ready, list[Any]]]:
    """Every job of every account run once against the simulator; ``/readyz`` as a caller
    with the admin read token sees it (and the log lines of the polls)."""
    clock = FakeClock(T0)
    sim = Simulator(SimConfig(accounts=("demo-media", "demo-shop")), clock)
    sim_runner = await serve(sim)
    read = "read-token-0123456789abcdef"
    settings = parse_config(
        {
            "upstream": {"base_url": sim_runner.base_url, "token": token or sim.token},
            "accounts": accounts,
            "admin": {"enabled": True, "read_token": read, "write_token": "w" * 24},
        },
        env={},
    )
    app = await create_app(settings, clock=clock, schedule=False)
    try:
        async with TestClient(TestServer(app)) as client:
            service = app[SERVICE]
            service.ctx.client.backoff_seconds = 0.0
            with capture_logs() as logs:
                for account in service.ctx.accounts:
                    for job in service.jobs(account):
                        await service.ctx.runner.run(job.area, account, job.poll, job.name)

            async def ready() -> tuple[int, dict[str, Any]]:
                reply = await client.get("/readyz", headers={"Authorization": f"Bearer {read}"})
                return reply.status, await reply.json()

            yield ready, logs
    finally:
        await sim_runner.cleanup()


async def test_an_unknown_account_is_named_and_not_ready_while_a_known_one_is() -> None:
    async with polled([{"name": "nosuch"}, {"name": "demo-media"}]) as (ready, logs):
        status, detail = await ready()
    assert status == 200
    assert detail["ready_accounts"] == ["demo-media"]
    assert list(detail["unknown_accounts"]) == ["nosuch"]
    assert "not found" in detail["unknown_accounts"]["nosuch"].lower()
    unknown = [line for line in logs if line["event"] == "account_unknown"]
    assert [(line["account"], line["log_level"]) for line in unknown] == [("nosuch", "warning")]
    assert not [line for line in logs if line["event"] == "upstream_token_rejected"]


async def test_only_unknown_accounts_is_503_naming_them_without_blaming_the_token() -> None:
    # No DVR streams: their no-op poll "succeeds" and must not make the account ready.
    async with polled(["nosuch", "gone"]) as (ready, logs):
        status, detail = await ready()
    assert status == 503
    assert detail["ready"] is False
    assert sorted(detail["unknown_accounts"]) == ["gone", "nosuch"]
    assert detail["reason"] == "the platform knows none of the accounts: nosuch, gone"
    events = [line["event"] for line in logs]
    assert events.count("account_unknown") == 2
    assert "upstream_token_rejected" not in events


async def test_a_refused_token_is_still_called_refused_and_not_an_unknown_account() -> None:
    async with polled(["demo-media"], token="not-the-token") as (ready, logs):
        status, detail = await ready()
    assert status == 503
    assert detail["unknown_accounts"] == {}
    events = [line["event"] for line in logs]
    assert events.count("upstream_token_rejected") == 1
    assert "account_unknown" not in events
