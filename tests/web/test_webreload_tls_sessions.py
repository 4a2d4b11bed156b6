"""A reloaded web config ends the TLS sessions made under the one before: a client that saved
its session cannot resume it past a client-CA rotation, with TLS 1.3 tickets or TLS 1.2."""

from __future__ import annotations

import asyncio
import shutil
import socket
import ssl
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from aiohttp import web

from exporter.config import ServerSettings
from exporter.web.serving import serve
from exporter.web.webauth import WEB_CONFIG, apply_web_config, listener_tls
from exporter.web.webconfig import load_web_config
from exporter.web.webreload import LiveWebConfig

from .tls_certs import Certs, make_certs


@dataclass(frozen=True)
class Reply:
    status: int | None  # None: the handshake or the connection failed
    session: ssl.SSLSession | None
    resumed: bool
    version: str | None


def fetch(port: int, client: ssl.SSLContext, session: ssl.SSLSession | None = None) -> Reply:
    """GET /metrics as a plain Python ssl client, offering ``session`` to resume."""
    try:
        with (
            socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
            client.wrap_socket(raw, server_hostname="127.0.0.1", session=session) as tls,
        ):
            tls.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            answer = b""
            while chunk := tls.recv(65536):  # reading on takes in the TLS 1.3 tickets too
                answer += chunk
            status = int(answer.split(b" ", 2)[1]) if answer else None
            return Reply(status, tls.session, tls.session_reused, tls.version())
    except (ssl.SSLError, OSError):
        return Reply(None, None, False, None)


@dataclass
class Served:
    port: int
    certs: Certs
    live: LiveWebConfig
    folder: Path


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[Served]:
    """An app behind client certificates (RequireAndVerifyClientCert), on the daemon's listener."""
    certs = make_certs(tmp_path)
    path = tmp_path / "web.yml"
    tls = {
        "cert_file": "server.crt",
        "key_file": "server.key",
        "client_auth_type": "RequireAndVerifyClientCert",
        "client_ca_file": "ca.crt",
    }
    path.write_text(yaml.safe_dump({"tls_server_config": tls}), encoding="utf-8")

    async def ok(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_get("/metrics", ok)
    apply_web_config(app, load_web_config(str(path)))
    runner, port = await serve(app, "127.0.0.1", 0, ServerSettings(), listener_tls(app))
    try:
        yield Served(port, certs, app[WEB_CONFIG], tmp_path)
    finally:
        await runner.cleanup()


@pytest.mark.parametrize("version", [ssl.TLSVersion.TLSv1_3, ssl.TLSVersion.TLSv1_2])
async def test_a_session_saved_before_a_client_ca_rotation_is_not_resumed(
    served: Served, version: ssl.TLSVersion
) -> None:
    client = ssl.create_default_context(cafile=str(served.certs.ca))
    client.maximum_version = version
    client.load_cert_chain(served.certs.client_cert, served.certs.client_key)
    first = await asyncio.to_thread(fetch, served.port, client)
    expected = "TLSv1.3" if version == ssl.TLSVersion.TLSv1_3 else "TLSv1.2"
    assert (first.status, first.resumed, first.version) == (200, False, expected)
    assert first.session is not None
    again = await asyncio.to_thread(fetch, served.port, client, first.session)
    assert (again.status, again.resumed) == (200, True)  # the same config: it resumes

    rotated = make_certs(served.folder / "rotated", ca_name="the next CA")
    shutil.copy(rotated.ca, served.certs.ca)  # the old CA taken away, another one trusted
    assert served.live.check() is True
    after = await asyncio.to_thread(fetch, served.port, client, again.session)
    assert after.status is None  # no resumption: a full handshake, and the old certificate fails
    assert not after.resumed


def ask(tls: ssl.SSLSocket) -> int | None:
    """One GET /metrics on an open connection, kept alive; its status, None when closed."""
    try:
        tls.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = tls.recv(1)
            if not chunk:
                return None
            head += chunk
        length = next(
            int(line.split(b":", 1)[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        body = b""
        while len(body) < length:
            body += tls.recv(length - len(body))
        return int(head.split(b" ", 2)[1])
    except (ssl.SSLError, OSError):
        return None


def keep_asking(port: int, client: ssl.SSLContext, between: Callable[[], None]) -> list[int | None]:
    """Two requests on one kept-alive connection, ``between`` run between them."""
    with (
        socket.create_connection(("127.0.0.1", port), timeout=10) as raw,
        client.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        first = ask(tls)
        between()
        return [first, ask(tls)]


async def test_a_connection_made_before_a_client_ca_rotation_is_not_served_after_it(
    served: Served,
) -> None:
    client = ssl.create_default_context(cafile=str(served.certs.ca))
    client.load_cert_chain(served.certs.client_cert, served.certs.client_key)
    kept = await asyncio.to_thread(keep_asking, served.port, client, lambda: None)
    assert kept == [200, 200]  # the same config: the connection stays

    def rotate() -> None:
        rotated = make_certs(served.folder / "rotated", ca_name="the next CA")
        shutil.copy(rotated.ca, served.certs.ca)
        assert asyncio.run_coroutine_threadsafe(checked(), loop).result(10) is True

    async def checked() -> bool:
        return served.live.check()

    loop = asyncio.get_running_loop()
    answers = await asyncio.to_thread(keep_asking, served.port, client, rotate)
    assert answers == [200, None]  # closed unanswered: a new connection checks the certificate
    assert (await asyncio.to_thread(fetch, served.port, client)).status is None
