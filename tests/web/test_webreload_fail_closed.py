"""The web config fails closed: a file that went bad keeps the one in force, and says so."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import bcrypt
import pytest
import yaml

from exporter.config import parse_config
from exporter.simulator import SimConfig, Simulator
from exporter.simulator import serve as serve_sim
from exporter.support.clock import FakeClock
from exporter.web.webauth import WEB_CONFIG
from exporter.web.webconfig import load_web_config
from exporter.web.webreload import LiveWebConfig
from tests.rig.daemon import Daemon, StartDaemon

USER, PASSWORD = "prometheus", "correct horse battery staple"
GAUGE = "cdnvideo_exporter_web_config_last_reload_successful"


def write_users(path: Path) -> str:
    hashed = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(4)).decode()
    path.write_text(yaml.safe_dump({"basic_auth_users": {USER: hashed}}), encoding="utf-8")
    return str(path)


@pytest.fixture
async def daemon(start_daemon: StartDaemon, tmp_path: Path) -> AsyncIterator[tuple[Daemon, Path]]:
    """The daemon's app under a web config with one user (over real HTTP), and the file."""
    clock = FakeClock()
    sim = Simulator(SimConfig(), clock)
    runner = await serve_sim(sim)
    path = tmp_path / "web.yml"
    try:
        settings = parse_config(
            {"upstream": {"base_url": runner.base_url, "token": sim.token}, "accounts": ["a"]},
            env={},
        )
        started = await start_daemon(settings, clock, web_config=load_web_config(write_users(path)))
        yield started, path
    finally:
        await runner.cleanup()


def gauge(served: Daemon) -> float | None:
    value = served.ctx.metrics.registry.get_sample_value(GAUGE)
    return None if value is None else float(value)


@pytest.mark.parametrize(
    "bad",
    [
        "",  # emptied in place
        "basic_auth_users:\n  prometheus: $2b$04$trunc",  # cut inside the hash
        "basic_auth_users: [",  # cut inside the YAML
        "basic_auth_users:\n",  # cut after the key: valid YAML, no user left
        "http_server_config: {}\n",  # valid, but basic auth gone: a restart decides that
        "basic_auth_users:\n  prometheus: $2b$15$" + "N" * 53,  # a cost above 14
    ],
)
async def test_a_bad_file_keeps_basic_auth_and_says_so(
    daemon: tuple[Daemon, Path], bad: str
) -> None:
    served, path = daemon
    client = served.client
    assert gauge(served) == 1
    auth = aiohttp.BasicAuth(USER, PASSWORD)
    assert (await client.get("/metrics", auth=auth)).status == 200
    path.write_text(bad, encoding="utf-8")
    assert served.app[WEB_CONFIG].check() is False
    assert (await client.get("/metrics")).status == 401  # still closed
    assert (await client.get("/metrics", auth=auth)).status == 200
    assert gauge(served) == 0
    write_users(path)
    path.write_text(path.read_text() + "# fixed\n", encoding="utf-8")
    assert served.app[WEB_CONFIG].check() is True
    assert gauge(served) == 1


async def test_an_emptied_file_without_users_is_refused_too(tmp_path: Path) -> None:
    """Only headers in force, the file emptied: refused (the toolkit reads an empty file as
    a config without TLS or users at start-up, and so does the exporter then)."""
    path = tmp_path / "web.yml"
    headers = {"http_server_config": {"headers": {"X-Frame-Options": "deny"}}}
    path.write_text(yaml.safe_dump(headers), encoding="utf-8")
    reports: list[bool] = []
    live = LiveWebConfig(load_web_config(str(path)), report=reports.append)
    path.write_text("", encoding="utf-8")
    assert live.check() is False
    assert live.config.headers == {"X-Frame-Options": "deny"}
    assert reports == [False]
    assert load_web_config(str(path)).empty  # at start-up: read, as the toolkit does


async def test_the_rate_limit_leaves_the_probes_alone(tmp_path: Path, aiohttp_client: Any) -> None:
    from aiohttp import web

    from exporter.web.webauth import apply_web_config

    path = tmp_path / "web.yml"
    path.write_text(yaml.safe_dump({"rate_limit": {"interval": "1h", "burst": 1}}))

    async def ok(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    app = web.Application()
    for route in ("/", "/healthz", "/readyz"):
        app.router.add_get(route, ok)
    apply_web_config(app, load_web_config(str(path)))
    client = await aiohttp_client(app)
    assert (await client.get("/")).status == 200
    assert (await client.get("/")).status == 429  # the bucket is empty ...
    for _ in range(5):
        assert (await client.get("/healthz")).status == 200  # ... and probes still answer
        assert (await client.get("/readyz")).status == 200
