"""Rules of basic auth and the rate limit that `make mutation` found untested: how the
``Authorization`` header is read, which verdicts the cache keeps, and what a reload keeps."""

from __future__ import annotations

import asyncio
import base64
import threading
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import bcrypt
import pytest
import yaml
from aiohttp import web

from exporter.config import parse_config
from exporter.simulator import SimConfig, Simulator
from exporter.simulator import serve as serve_sim
from exporter.support.clock import FakeClock
from exporter.web.webauth import WEB_CONFIG, BasicAuth, apply_web_config
from exporter.web.webconfig import load_web_config
from tests.rig.daemon import StartDaemon

CACHE = 256  # verdicts remembered (webauth.CACHE_SIZE), the oldest forgotten first


def basic(raw: bytes) -> str:
    return "Basic " + base64.b64encode(raw).decode()


@pytest.mark.parametrize(
    ("header", "read"),
    [
        (basic(b"prometheus:pa:ss:word"), ("prometheus", "pa:ss:word")),  # ":" ends the user
        (basic(b"prometheus:"), ("prometheus", "")),
        ("bAsIc " + base64.b64encode(b"u:p").decode(), ("u", "p")),
        (basic(b"no colon at all"), None),
        (basic(b"u:p") + "!", None),  # not base64: refused, not cleaned up
        (basic(b"u:p")[:-2] + "*" + basic(b"u:p")[-2:], None),
        ("Bearer " + base64.b64encode(b"u:p").decode(), None),
    ],
)
def test_the_authorization_header_is_read_as_rfc_7617_says(
    header: str, read: tuple[str, str] | None
) -> None:
    assert BasicAuth.credentials(header) == read


@pytest.fixture
def bcrypt_calls(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """Every password bcrypt is asked to check, in order."""
    calls: list[bytes] = []
    real = bcrypt.checkpw

    def spy(password: bytes, hashed: bytes) -> bool:
        calls.append(password)
        return real(password, hashed)

    monkeypatch.setattr(bcrypt, "checkpw", spy)
    return calls


async def test_the_cache_keeps_recent_verdicts_and_forgets_the_least_recently_used(
    bcrypt_calls: list[bytes],
) -> None:
    auth = BasicAuth({"u": bcrypt.hashpw(b"right", bcrypt.gensalt(4))})
    tries = [aiohttp.encode_basic_auth("u", f"wrong-{i}") for i in range(CACHE + 1)]
    for header in tries[:CACHE]:
        assert await auth.allows(header) is False
    assert await auth.allows(tries[0]) is False  # still remembered, and now the most recent
    assert len(bcrypt_calls) == CACHE
    assert await auth.allows(tries[CACHE]) is False  # one more: the least recent verdict goes
    assert await auth.allows(tries[CACHE]) is False
    assert len(bcrypt_calls) == CACHE + 1  # the newest is remembered
    assert await auth.allows(tries[0]) is False  # used a moment ago: kept
    assert len(bcrypt_calls) == CACHE + 1
    assert await auth.allows(tries[1]) is False
    assert bcrypt_calls[-1] == b"wrong-1"  # the least recently used was forgotten, checked again


def write(path: Path, **doc: Any) -> str:
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return str(path)


@pytest.fixture
async def serve(aiohttp_server: Callable[..., Awaitable[Any]]) -> Any:
    """An app answering "ok" under the web config file at ``path``, over real HTTP."""
    sessions: list[aiohttp.ClientSession] = []

    async def start(path: str) -> tuple[web.Application, aiohttp.ClientSession, str]:
        async def ok(_: web.Request) -> web.Response:
            return web.Response(text="ok")

        app = web.Application()
        app.router.add_get("/", ok)
        apply_web_config(app, load_web_config(path))
        server = await aiohttp_server(app)
        session = aiohttp.ClientSession()
        sessions.append(session)
        return app, session, str(server.make_url("/"))

    yield start
    for session in sessions:
        await session.close()


async def statuses(session: aiohttp.ClientSession, url: str, n: int) -> list[int]:
    out = []
    for _ in range(n):
        async with session.get(url) as resp:
            out.append(resp.status)
    return out


async def test_a_reload_with_the_same_rate_limit_does_not_refill_the_bucket(
    serve: Any, tmp_path: Path
) -> None:
    limit = {"interval": "1h", "burst": 2}
    path = write(tmp_path / "web.yml", rate_limit=limit)
    app, session, url = await serve(path)
    assert await statuses(session, url, 3) == [200, 200, 429]
    headers = {"headers": {"X-Frame-Options": "deny"}}
    write(tmp_path / "web.yml", rate_limit=limit, http_server_config=headers)
    assert app[WEB_CONFIG].check() is True  # reloaded: another header, the same limit
    assert await statuses(session, url, 1) == [429]


async def test_a_reload_with_another_rate_limit_starts_a_fresh_bucket(
    serve: Any, tmp_path: Path
) -> None:
    path = write(tmp_path / "web.yml", rate_limit={"interval": "1h", "burst": 1})
    app, session, url = await serve(path)
    assert await statuses(session, url, 2) == [200, 429]
    write(tmp_path / "web.yml", rate_limit={"interval": "1h", "burst": 30})
    assert app[WEB_CONFIG].check() is True
    assert await statuses(session, url, 3) == [200, 200, 200]


async def test_without_a_web_config_readiness_shows_its_detail(
    start_daemon: StartDaemon,
) -> None:
    clock = FakeClock()
    sim = Simulator(SimConfig(), clock)
    sim_runner = await serve_sim(sim)
    try:
        settings = parse_config(
            {"upstream": {"base_url": sim_runner.base_url, "token": sim.token}, "accounts": ["a"]},
            env={},
        )
        client = (await start_daemon(settings, clock)).client
        resp = await client.get("/readyz")
        assert (resp.status, await resp.json()) == (
            503,
            {
                "ready": False,
                "accounts": ["a"],
                "ready_accounts": [],
                "unknown_accounts": {},
                "pending_first_poll": ["traffic/a", "restream/a", "dvr/a", "talking_head/a"],
                "areas": {
                    "a": {
                        area: {"ready": False, "reason": "waiting for its first poll"}
                        for area in ("traffic", "restream", "dvr", "talking_head")
                    }
                },
                "reason": "traffic/a: waiting for its first poll (and 3 more)",
            },
        )
    finally:
        await sim_runner.cleanup()


REAL_USER, REAL_PASSWORD = "prometheus", "correct horse battery staple"
QUEUE = 2 + 64  # checks running and waiting (webauth.BCRYPT_WORKERS + BCRYPT_QUEUE)


class HeldGuesses:
    """Wraps ``bcrypt.checkpw``: a check of any password but the real one waits for ``release``
    (a guess that takes its time, as a cost-14 one does), and the hashes checked are kept."""

    def __init__(self) -> None:
        self.real = bcrypt.checkpw
        self.release = threading.Event()
        self.hashes: list[bytes] = []

    def __call__(self, password: bytes, hashed: bytes) -> bool:
        self.hashes.append(hashed)
        if password != REAL_PASSWORD.encode():
            self.release.wait(30)
        return bool(self.real(password, hashed))


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> Iterator[HeldGuesses]:
    spy = HeldGuesses()
    monkeypatch.setattr(bcrypt, "checkpw", spy)
    yield spy
    spy.release.set()


async def test_after_a_reload_a_flood_of_guesses_does_not_lock_the_scrape_out(
    serve: Any, tmp_path: Path, held: HeldGuesses
) -> None:
    users = {REAL_USER: bcrypt.hashpw(REAL_PASSWORD.encode(), bcrypt.gensalt(4)).decode()}
    path = write(tmp_path / "web.yml", basic_auth_users=users)
    app, session, url = await serve(path)
    scrape = {"Authorization": aiohttp.encode_basic_auth(REAL_USER, REAL_PASSWORD)}
    async with session.get(url, headers=scrape) as resp:
        assert resp.status == 200  # the scrape passed once, before the reload
    other = bcrypt.hashpw(b"another", bcrypt.gensalt(4)).decode()
    write(tmp_path / "web.yml", basic_auth_users={**users, "grafana": other})
    assert app[WEB_CONFIG].check() is True  # reloaded: one user more, the scrape's hash the same

    async def guess(i: int) -> int:
        user = REAL_USER if i % 2 else f"nobody-{i}"  # the real name and made-up ones
        headers = {"Authorization": aiohttp.encode_basic_auth(user, f"guess-{i}")}
        async with session.get(url, headers=headers) as resp:
            return resp.status

    checked = len(held.hashes)
    flood = [asyncio.create_task(guess(i)) for i in range(QUEUE + 20)]
    try:
        while sum(1 for t in flood if t.done() and t.result() == 429) < 20:  # the queue is full
            await asyncio.wait(flood, timeout=1, return_when=asyncio.FIRST_COMPLETED)
        assert len(held.hashes) == checked + 2  # two guesses being checked, 64 waiting
        scrapes = []
        for _ in range(5):
            async with session.get(url, headers=scrape) as resp:
                scrapes.append(resp.status)
        assert scrapes == [200] * 5
        assert len(held.hashes) == checked + 2  # the scrapes needed no check
    finally:
        held.release.set()
        answers = await asyncio.gather(*flood, return_exceptions=True)
    assert sorted(set(answers)) == [401, 429]  # type: ignore[type-var]


async def test_a_changed_hash_is_not_taken_from_the_cache_after_a_reload(
    serve: Any, tmp_path: Path, held: HeldGuesses
) -> None:
    held.release.set()
    users = {REAL_USER: bcrypt.hashpw(REAL_PASSWORD.encode(), bcrypt.gensalt(4)).decode()}
    path = write(tmp_path / "web.yml", basic_auth_users=users)
    app, session, url = await serve(path)
    scrape = {"Authorization": aiohttp.encode_basic_auth(REAL_USER, REAL_PASSWORD)}
    async with session.get(url, headers=scrape) as resp:
        assert resp.status == 200
    renewed = bcrypt.hashpw(b"the new password", bcrypt.gensalt(4)).decode()
    write(tmp_path / "web.yml", basic_auth_users={REAL_USER: renewed})
    assert app[WEB_CONFIG].check() is True
    async with session.get(url, headers=scrape) as resp:
        assert resp.status == 401  # the old password, remembered before, no longer passes
    assert held.hashes[-1] == renewed.encode()


async def test_an_unknown_user_is_checked_at_the_lowest_cost_in_the_file(
    held: HeldGuesses,
) -> None:
    held.release.set()
    auth = BasicAuth(
        {
            "cheap": bcrypt.hashpw(b"a", bcrypt.gensalt(4)),
            "dear": bcrypt.hashpw(b"b", bcrypt.gensalt(6)),
        }
    )
    assert await auth.allows(aiohttp.encode_basic_auth("nobody", "guess")) is False
    assert len(held.hashes) == 1
    assert held.hashes[0].startswith(b"$2b$04$")  # a dummy hash, at the cheaper user's cost
