"""The daemon's listener under a web config: TLS, basic auth, open probes, the admin API's own
bearer tokens, client-certificate SANs, headers and the rate limit, over real HTTPS."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import ssl
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import bcrypt
import pytest
import structlog
import yaml
from aiohttp import web

from exporter.config import parse_config
from exporter.simulator import SimConfig, Simulator, serve
from exporter.support.clock import FakeClock
from exporter.web import webauth
from exporter.web.webauth import WEB_CONFIG, BasicAuth, TokenBucket, listener_tls
from exporter.web.webconfig import load_web_config
from exporter.web.webreload import LiveWebConfig
from tests.rig.daemon import StartDaemon

from .tls_certs import Certs, make_certs

USER, PASSWORD = "prometheus", "correct horse battery staple"
READ_TOKEN = "listener-test-read-token-0123"
WRITE_TOKEN = "listener-test-write-token-0123"


def hashed(password: str) -> str:
    return bcrypt.hashpw(password.encode(), bcrypt.gensalt(4)).decode()


@dataclass
class Listener:
    url: str
    certs: Certs
    client_ssl: ssl.SSLContext
    live: LiveWebConfig

    async def get(
        self, path: str, auth: tuple[str, str] | None = None, **headers: str
    ) -> tuple[int, str, dict[str, str]]:
        if auth:
            headers["Authorization"] = aiohttp.encode_basic_auth(*auth)
        async with (
            aiohttp.ClientSession() as session,
            session.get(f"{self.url}{path}", headers=headers, ssl=self.client_ssl) as resp,
        ):
            return resp.status, await resp.text(), dict(resp.headers)


Start = Callable[..., Awaitable[Listener]]


def write_web_config(folder: Path, certs: Certs, **extra: Any) -> str:
    doc: dict[str, Any] = {
        "tls_server_config": {"cert_file": "server.crt", "key_file": "server.key"},
        "basic_auth_users": {USER: hashed(PASSWORD)},
    }
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(doc.get(key), dict):
            doc[key] = {**doc[key], **value}
        elif value is None:
            doc.pop(key, None)
        else:
            doc[key] = value
    path = folder / "web.yml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return str(path)


@pytest.fixture
async def start(tmp_path: Path, start_daemon: StartDaemon) -> AsyncIterator[Start]:
    """Start simulator + exporter app serving HTTPS with a web config made from ``extra``."""
    runners: list[web.AppRunner] = []
    certs = make_certs(tmp_path)

    async def _start(**extra: Any) -> Listener:
        clock = FakeClock()
        sim = Simulator(SimConfig(), clock)
        sim_runner = await serve(sim)
        runners.append(sim_runner)
        config = load_web_config(write_web_config(tmp_path, certs, **extra))
        settings = parse_config(
            {
                "upstream": {"base_url": sim_runner.base_url, "token": sim.token},
                "accounts": ["demo-media"],
                "admin": {"enabled": True, "read_token": READ_TOKEN, "write_token": WRITE_TOKEN},
            },
            env={},
        )
        daemon = await start_daemon(settings, clock, tls=listener_tls, web_config=config)
        client = ssl.create_default_context(cafile=str(certs.ca))
        return Listener(daemon.url, certs, client, daemon.app[WEB_CONFIG])

    yield _start
    for runner in reversed(runners):
        await runner.cleanup()


async def test_metrics_and_landing_need_the_password(start: Start) -> None:
    served = await start()
    for path in ("/metrics", "/"):
        status, body, headers = await served.get(path)
        assert (status, body) == (401, "401 Unauthorized\n"), path
        assert headers["WWW-Authenticate"].startswith('Basic realm="cdnvideo-exporter"')
        status, _, _ = await served.get(path, auth=(USER, "wrong password"))
        assert status == 401, path
        status, _, _ = await served.get(path, auth=("nobody", PASSWORD))
        assert status == 401, path
    status, body, _ = await served.get("/metrics", auth=(USER, PASSWORD))
    assert status == 200
    assert "cdnvideo_exporter_build_info{" in body
    status, body, _ = await served.get("/", auth=(USER, PASSWORD))
    assert status == 200
    assert "<h1>cdnvideo-exporter</h1>" in body


async def test_probes_stay_open_but_readiness_detail_needs_the_password(start: Start) -> None:
    served = await start()
    status, body, _ = await served.get("/healthz")
    assert (status, json.loads(body)) == (200, {"status": "ok"})
    status, body, _ = await served.get("/readyz")
    assert (status, json.loads(body)) == (503, {"ready": False})  # no account names
    status, body, _ = await served.get("/readyz", auth=(USER, PASSWORD))
    assert status == 503
    assert json.loads(body)["accounts"] == ["demo-media"]


async def test_admin_api_keeps_its_bearer_tokens_over_tls(start: Start) -> None:
    served = await start()
    path = "/api/v1/restream/demo-media/status"
    status, _, _ = await served.get(path)
    assert status == 401  # the admin API's own check: no bearer token
    status, body, _ = await served.get(path, Authorization=f"Bearer {READ_TOKEN}")
    assert status == 200, body
    assert isinstance(json.loads(body), list | dict)
    # basic-auth credentials are no admin token
    status, _, _ = await served.get(path, auth=(USER, PASSWORD))
    assert status == 401


async def test_headers_of_the_file_are_added_where_a_page_sets_none(start: Start) -> None:
    served = await start(
        http_server_config={
            "headers": {
                "Strict-Transport-Security": "max-age=31536000",
                "X-Frame-Options": "deny",
                "Content-Security-Policy": "default-src 'self'",
            }
        }
    )
    _, _, headers = await served.get("/metrics", auth=(USER, PASSWORD))
    assert headers["Strict-Transport-Security"] == "max-age=31536000"
    assert headers["Content-Security-Policy"] == "default-src 'self'"
    _, _, headers = await served.get("/", auth=(USER, PASSWORD))
    assert headers["X-Frame-Options"] == "deny"
    assert headers["Content-Security-Policy"].startswith("default-src 'none'")  # its own
    _, _, headers = await served.get("/", auth=(USER, "wrong"))
    assert headers["Strict-Transport-Security"] == "max-age=31536000"


@pytest.mark.parametrize(
    ("allowed", "status"), [("prometheus.example", 200), ("scraper.example", 403)]
)
async def test_client_certificates_are_verified_and_their_sans_checked(
    start: Start, allowed: str, status: int
) -> None:
    served = await start(
        tls_server_config={
            "client_auth_type": "RequireAndVerifyClientCert",
            "client_ca_file": "ca.crt",
            "client_allowed_sans": [allowed],
        },
        basic_auth_users=None,
    )
    with pytest.raises(aiohttp.ClientError):  # no client certificate: no handshake
        await served.get("/metrics")
    served.client_ssl.load_cert_chain(served.certs.client_cert, served.certs.client_key)
    got, body, _ = await served.get("/metrics")
    assert got == status
    if status == 200:
        assert "cdnvideo_exporter_build_info{" in body
    else:
        assert body == "client certificate: no allowed SAN\n"


async def test_the_rate_limit_answers_429_past_the_burst(start: Start) -> None:
    served = await start(rate_limit={"interval": "1h", "burst": 2}, basic_auth_users=None)
    statuses = [(await served.get("/metrics"))[0] for _ in range(3)]
    assert statuses == [200, 200, 429]  # (the probes are not counted: test_fail_closed.py)


class BcryptSpy:
    """Wraps ``bcrypt.checkpw``: the hashes it was called with, how many ran at once; a gate
    holds every call for a wrong password until it is opened."""

    def __init__(self, real: object) -> None:
        self.real = real
        self.hashes: list[bytes] = []
        self.running = 0
        self.most = 0
        self.entered = threading.Semaphore(0)
        self.gate = threading.Event()
        self.gate.set()
        self._lock = threading.Lock()

    def __call__(self, password: bytes, hashed_pw: bytes) -> bool:
        with self._lock:
            self.hashes.append(hashed_pw)
            self.running += 1
            self.most = max(self.most, self.running)
        self.entered.release()
        try:
            if password != PASSWORD.encode():
                self.gate.wait(30)
            assert callable(self.real)
            return bool(self.real(password, hashed_pw))
        finally:
            with self._lock:
                self.running -= 1


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> Iterator[BcryptSpy]:
    found = BcryptSpy(bcrypt.checkpw)
    monkeypatch.setattr(webauth.bcrypt, "checkpw", found)
    yield found
    found.gate.set()


def basic(user: str, password: str) -> str:
    return aiohttp.encode_basic_auth(user, password)


async def test_an_unknown_user_costs_a_bcrypt_check_against_a_dummy_hash(spy: BcryptSpy) -> None:
    user_hash = hashed(PASSWORD).encode()
    auth = BasicAuth({USER: user_hash})
    assert not await auth.allows(basic("nobody", PASSWORD))
    assert len(spy.hashes) == 1
    assert spy.hashes[0] != user_hash
    assert spy.hashes[0].startswith(b"$2b$04$")  # the cost of the configured users' hashes
    assert not await auth.allows(basic(USER, "wrong"))
    assert spy.hashes[1:] == [user_hash]
    assert await auth.allows(basic(USER, PASSWORD))
    assert await auth.allows(basic(USER, PASSWORD))  # cached
    assert not await auth.allows(basic(USER, "wrong"))  # cached too
    assert spy.hashes[2:] == [user_hash]


async def test_concurrent_checks_of_one_password_share_one_bcrypt_call(spy: BcryptSpy) -> None:
    auth = BasicAuth({USER: hashed(PASSWORD).encode()})
    good = basic(USER, PASSWORD)
    assert await asyncio.gather(*(auth.allows(good) for _ in range(4))) == [True] * 4
    assert len(spy.hashes) == 1


async def test_a_shared_check_cut_short_is_run_again_for_the_one_sharing_it(
    spy: BcryptSpy,
) -> None:
    auth = BasicAuth({USER: hashed(PASSWORD).encode()})
    wrong = basic(USER, "wrong")
    spy.gate.clear()
    first = asyncio.create_task(auth.allows(wrong))
    assert await asyncio.to_thread(spy.entered.acquire, True, 30)
    second = asyncio.create_task(auth.allows(wrong))
    await asyncio.sleep(0)  # the second now waits for the first one's check
    first.cancel()
    spy.gate.set()
    assert await second is False
    assert first.cancelled()
    assert len(spy.hashes) == 2


def test_the_token_bucket_refills_at_one_per_interval() -> None:
    now = [0.0]
    bucket = TokenBucket(2.0, 2, now=lambda: now[0])
    assert [bucket.allow() for _ in range(3)] == [True, True, False]
    now[0] = 1.0
    assert not bucket.allow()
    now[0] = 2.0
    assert bucket.allow()
    assert not bucket.allow()
    assert not TokenBucket(1.0, 0).allow()  # burst 0 admits nothing, as in the toolkit


async def test_plain_http_to_the_tls_port_gets_no_answer(start: Start) -> None:
    served = await start()
    plain = served.url.replace("https://", "http://")
    async with aiohttp.ClientSession() as session:
        with pytest.raises(aiohttp.ClientError):
            async with session.get(
                f"{plain}/metrics",
                headers={"Authorization": aiohttp.encode_basic_auth(USER, PASSWORD)},
            ):
                pass
    status, _, _ = await served.get("/metrics", auth=(USER, PASSWORD))
    assert status == 200  # the listener is still there


def _image_healthcheck() -> str:
    """The Python code of the container image's HEALTHCHECK."""
    dockerfile = (Path(__file__).resolve().parents[2] / "Dockerfile").read_text(encoding="utf-8")
    match = re.search(r'HEALTHCHECK .*?CMD \["python", "-c", "(.*?)"\]', dockerfile, re.S)
    assert match, "no python HEALTHCHECK in the Dockerfile"
    return match.group(1)


async def test_the_image_healthcheck_passes_over_tls(start: Start) -> None:
    served = await start()
    code = _image_healthcheck()
    for url, ok in ((f"{served.url}/healthz", True), (f"{served.url}/nowhere", False)):
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-c", code, env={"CDNVIDEO_HEALTHCHECK_URL": url},
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
        assert (await proc.wait() == 0) == ok, url


async def test_a_changed_password_applies_without_a_restart(start: Start, tmp_path: Path) -> None:
    served = await start()
    assert not served.live.check()  # nothing changed
    write_web_config(tmp_path, served.certs, basic_auth_users={USER: hashed("a new password")})
    assert served.live.check()
    assert (await served.get("/metrics", auth=(USER, PASSWORD)))[0] == 401
    assert (await served.get("/metrics", auth=(USER, "a new password")))[0] == 200


async def test_a_renewed_certificate_is_served_to_new_connections(
    start: Start, tmp_path: Path
) -> None:
    served = await start()
    renewed = make_certs(tmp_path / "renewed")  # another CA, as after a CA rotation
    shutil.copy(renewed.server_cert, served.certs.server_cert)
    shutil.copy(renewed.server_key, served.certs.server_key)
    assert served.live.check()
    with pytest.raises(aiohttp.ClientConnectorCertificateError):  # trusts the old CA only
        await served.get("/healthz")
    served.client_ssl = ssl.create_default_context(cafile=str(renewed.ca))
    assert (await served.get("/metrics", auth=(USER, PASSWORD)))[0] == 200


async def test_a_broken_edit_keeps_the_last_good_config(start: Start, tmp_path: Path) -> None:
    served = await start()
    (tmp_path / "web.yml").write_text(
        "basic_auth_users: {prometheus: not-a-hash}\n", encoding="utf-8"
    )
    with structlog.testing.capture_logs() as logs:
        assert not served.live.check()
    assert [e["event"] for e in logs] == ["web_config_reload_failed"]
    assert "basic_auth_users.prometheus: not a bcrypt hash" in logs[0]["error"]
    assert "not-a-hash" not in logs[0]["error"]
    assert (await served.get("/metrics", auth=(USER, PASSWORD)))[0] == 200
