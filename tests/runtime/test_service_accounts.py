"""Service: which accounts a replica serves, and the series that come and go with them."""

from __future__ import annotations

import aiohttp

from exporter.config import parse_config
from exporter.runtime.scheduler import Scheduler
from exporter.runtime.service import Service, build_context
from exporter.support.clock import FakeClock
from exporter.support.logs import Redactor

CONFIG = {
    "upstream": {"base_url": "http://127.0.0.1:9", "token": "t0ken-for-tests"},
    "accounts": [{"name": "acme"}, {"name": "globex"}],
}


async def test_served_accounts_start_every_window_outcome_at_zero_and_forget_them() -> None:
    settings = parse_config(CONFIG, env={})
    async with aiohttp.ClientSession() as session:
        ctx = build_context(settings, session, FakeClock(), Redactor())
        service = Service(ctx, Scheduler(ctx.runner, ctx.clock))
        registry = ctx.metrics.registry

        def missed(account: str) -> float | None:
            return registry.get_sample_value(
                "cdnvideo_traffic_windows_total", {"account": account, "outcome": "missed"}
            )

        service.serve_accounts(("acme", "globex"))
        assert ctx.accounts == ("acme", "globex")
        assert (missed("acme"), missed("globex")) == (0.0, 0.0)
        service.serve_accounts(("acme",))
        assert ctx.accounts == ("acme",)
        assert (missed("acme"), missed("globex")) == (0.0, None)


async def test_a_shard_serves_only_its_own_configured_accounts() -> None:
    names = [f"account-{i}" for i in range(40)]
    served: list[str] = []
    for index in range(3):
        settings = parse_config({**CONFIG, "accounts": names, "shard": f"{index}/3"}, env={})
        async with aiohttp.ClientSession() as session:
            ctx = build_context(settings, session, FakeClock(), Redactor())
        assert ctx.accounts, f"shard {index}/3 got no account of 40"
        served += ctx.accounts
    assert sorted(served) == sorted(names)  # every account exactly once across the shards
