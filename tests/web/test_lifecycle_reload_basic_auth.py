"""``POST /-/reload`` with basic auth, the admin API and ``--web.enable-lifecycle`` all on: the
password goes in ``Authorization``, the write token in ``X-Admin-Token``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
import yaml

from exporter.config import Settings, parse_config
from exporter.simulator import SimConfig, Simulator, serve
from exporter.support.clock import FakeClock
from exporter.web.lifecycle import ADMIN_TOKEN_HEADER, LIFECYCLE_OFF
from exporter.web.webconfig import load_web_config
from tests.rig.daemon import running

from .test_serving_listener import PASSWORD, READ_TOKEN, USER, WRITE_TOKEN, hashed

BASIC = aiohttp.encode_basic_auth(USER, PASSWORD)


async def _serve(tmp_path: Path, lifecycle: bool) -> AsyncIterator[str]:
    sim = Simulator(SimConfig(), FakeClock())
    sim_runner = await serve(sim)
    web_yml = tmp_path / "web.yml"
    web_yml.write_text(yaml.safe_dump({"basic_auth_users": {USER: hashed(PASSWORD)}}))
    raw = {
        "upstream": {"base_url": sim_runner.base_url, "token": sim.token},
        "accounts": ["demo-media"],
        "admin": {"enabled": True, "read_token": READ_TOKEN, "write_token": WRITE_TOKEN},
    }

    def load() -> Settings:
        return parse_config(raw, env={})

    try:
        async with running(
            load(),
            FakeClock(),
            web_config=load_web_config(str(web_yml)),
            load=load,
            enable_lifecycle=lifecycle,
        ) as started:
            yield f"{started.url}/-/reload"
    finally:
        await sim_runner.cleanup()


@pytest.fixture
async def reload_url(tmp_path: Path) -> AsyncIterator[str]:
    async for url in _serve(tmp_path, lifecycle=True):
        yield url


@pytest.fixture
async def off_url(tmp_path: Path) -> AsyncIterator[str]:
    async for url in _serve(tmp_path, lifecycle=False):
        yield url


async def post(url: str, **headers: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as session, session.post(url, headers=headers) as resp:
        return resp.status, await resp.text()


async def test_the_password_and_the_write_token_in_its_own_header_reload(
    reload_url: str,
) -> None:
    status, body = await post(reload_url, Authorization=BASIC, **{ADMIN_TOKEN_HEADER: WRITE_TOKEN})
    assert (status, body) == (200, "config reloaded: applied: nothing changed\n")


async def test_each_of_the_two_alone_is_refused(reload_url: str) -> None:
    assert (await post(reload_url, Authorization=BASIC))[0] == 401  # no write token
    read = await post(reload_url, Authorization=BASIC, **{ADMIN_TOKEN_HEADER: READ_TOKEN})
    assert read[0] == 403
    assert "X-Admin-Token" in read[1]
    token_only = {ADMIN_TOKEN_HEADER: WRITE_TOKEN}
    assert (await post(reload_url, **token_only))[0] == 401  # basic auth first
    bearer = await post(reload_url, Authorization=f"Bearer {WRITE_TOKEN}")
    assert bearer[0] == 401  # the Authorization header is the password's


async def test_without_the_flag_the_answer_names_it(off_url: str) -> None:
    status, body = await post(off_url, Authorization=BASIC, **{ADMIN_TOKEN_HEADER: WRITE_TOKEN})
    assert (status, body) == (403, LIFECYCLE_OFF)
