"""One failed-authentication throttle for every authenticated route, bounded in memory."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import bcrypt
import pytest
import yaml

from exporter.config import parse_config
from exporter.simulator import SimConfig, Simulator
from exporter.simulator import serve as serve_sim
from exporter.support.clock import FakeClock
from exporter.web.ratelimit import FailureThrottle, WindowLimit
from exporter.web.webconfig import WebConfig, load_web_config
from tests.rig.daemon import StartDaemon

READ, WRITE = "read-token-0123456789", "write-token-0123456789"


@pytest.fixture(params=[False])
async def daemon(start_daemon: StartDaemon, request: Any, tmp_path: Path) -> AsyncIterator[Any]:
    """The daemon with the admin API and ``POST /-/reload`` on, against the simulator (with
    basic auth from a web config when the param is True)."""
    clock = FakeClock()
    sim = Simulator(SimConfig(), clock)
    runner = await serve_sim(sim)
    raw = {
        "upstream": {"base_url": runner.base_url, "token": sim.token},
        "accounts": ["demo-media"],
        "admin": {"enabled": True, "read_token": READ, "write_token": WRITE},
    }
    settings = parse_config(raw, env={})
    try:
        started = await start_daemon(
            settings,
            clock,
            load=lambda: settings,
            enable_lifecycle=True,
            web_config=web_config(tmp_path) if request.param else None,
        )
        yield started.client
    finally:
        await runner.cleanup()


def web_config(tmp_path: Path) -> WebConfig:
    hashed = bcrypt.hashpw(b"pw", bcrypt.gensalt(4)).decode()
    path = tmp_path / "web.yml"
    path.write_text(yaml.safe_dump({"basic_auth_users": {"prometheus": hashed}}))
    return load_web_config(str(path))


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


LIST = "/api/v1/restream/demo-media/resources"


async def fail_ten_times(daemon: Any, method: str, path: str) -> None:
    """The limit's 10 failed authentications (each 401) at one route, from one address."""
    for i in range(10):
        resp = await daemon.request(method, path, headers=bearer(f"guess-{path}-{i}"))
        assert resp.status == 401


async def test_reload_shares_the_admin_throttle(daemon: Any) -> None:
    await fail_ten_times(daemon, "GET", LIST)
    resp = await daemon.get(LIST, headers=bearer("g"))
    assert resp.status == 429
    for i in range(40):
        resp = await daemon.post("/-/reload", headers=bearer(f"reload-guess-{i}"))
        assert resp.status == 429
        assert resp.headers["Retry-After"] == "60"
    resp = await daemon.post("/-/reload", headers=bearer(WRITE))  # a right token passes
    assert resp.status == 200


async def test_failures_at_reload_throttle_the_admin_api(daemon: Any) -> None:
    await fail_ten_times(daemon, "POST", "/-/reload")
    resp = await daemon.get(LIST, headers=bearer("x"))
    assert resp.status == 429
    assert (await resp.json())["error"] == "rate_limited"
    resp = await daemon.get(LIST, headers=bearer(READ))
    assert resp.status == 200


@pytest.mark.parametrize("daemon", [True], indirect=True)
async def test_failures_at_the_openapi_document_are_throttled_too(daemon: Any) -> None:
    await fail_ten_times(daemon, "GET", "/api/v1/openapi.json")
    resp = await daemon.get("/api/v1/openapi.json", headers=bearer("doc-guess"))
    assert resp.status == 429
    assert resp.headers["Retry-After"] == "60"
    resp = await daemon.get(LIST, headers=bearer("x"))
    assert resp.status == 429  # the same throttle
    assert (await daemon.get("/api/v1/openapi.json", headers=bearer(READ))).status == 200


def test_the_table_keeps_a_fixed_size_evicting_the_longest_idle_key() -> None:
    clock = FakeClock()
    limit = WindowLimit(clock, limit=2, window=60.0, max_keys=3)
    for key in ("a", "b", "c"):
        limit.note(key)
        clock.advance(1)
    limit.note("a")  # "a" is the most recent now; "b" has been idle longest
    limit.note("d")
    assert len(limit) == 3
    assert set(limit.snapshot()) == {"a", "c", "d"}
    for _ in range(100):  # a hammered key keeps only the times that decide its wait
        limit.note("d")
    assert len(limit.snapshot()["d"]) == 2


def test_a_failure_costs_the_same_with_the_table_full() -> None:
    """Every key inside the window (nothing idle to drop): the table stays at its size."""
    clock = FakeClock()
    throttle = FailureThrottle(clock, limit=10, proxy_header="")
    for i in range(12_000):
        throttle.failed(f"10.0.{i // 256}.{i % 256}", {}, f"guess-{i}")
    assert len(throttle) == 10_000
