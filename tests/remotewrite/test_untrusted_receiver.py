"""The sender trusts its receiver no further than the protocol: a real aiohttp receiver on
127.0.0.1 answers with a huge body, redirects, and a certificate for another name."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Awaitable, Callable
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from exporter.remotewrite.sender import ANSWER_BYTES, Answer, Sender
from exporter.remotewrite.settings import RemoteWriteSettings, TlsConfig
from exporter.remotewrite.wire import encode
from tests.remotewrite.receiver import Receiver
from tests.web.tls_certs import make_certs

ServerFactory = Callable[..., Awaitable[TestServer]]
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
MiB = 1024 * 1024
HUGE = 256 * MiB


async def post_to(aiohttp_server: ServerFactory, handler: Handler) -> Answer:
    """One remote write to a receiver on 127.0.0.1 that answers with ``handler``."""
    app = web.Application()
    app.router.add_post("/api/v1/write", handler)
    server = await aiohttp_server(app, host="127.0.0.1", port=0)
    settings = RemoteWriteSettings(url=str(server.make_url("/api/v1/write")))
    async with aiohttp.ClientSession() as session:
        return await Sender(settings, session).post(encode([]))


async def test_a_huge_answer_is_read_only_up_to_the_bound(aiohttp_server: ServerFactory) -> None:
    sent = [0]
    finished = asyncio.Event()

    async def flood(request: web.Request) -> web.StreamResponse:
        await request.read()
        resp = web.StreamResponse(status=500)
        resp.content_length = HUGE
        await resp.prepare(request)
        chunk = b"x" * MiB
        try:
            while sent[0] < HUGE:
                await resp.write(chunk)
                sent[0] += len(chunk)
        except (ConnectionError, RuntimeError):
            pass  # the sender hung up
        finally:
            finished.set()
        return resp

    answer = await post_to(aiohttp_server, flood)
    await asyncio.wait_for(finished.wait(), 30)
    assert (answer.verdict, answer.status) == ("retry", 500)
    assert answer.detail == "x" * ANSWER_BYTES
    assert sent[0] < 32 * MiB  # the socket buffers' worth, not the 256 MiB body


@pytest.mark.parametrize("status", [301, 303, 307, 308])
async def test_a_redirect_is_refused_naming_the_location_masked(
    aiohttp_server: ServerFactory, status: int
) -> None:
    elsewhere = Receiver()
    other = await aiohttp_server(elsewhere.app(), host="127.0.0.1", port=0)
    location = str(other.make_url("/api/v1/write")) + "?token=s3cr3t-token"

    async def redirect(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(status=status, headers={"Location": location})

    answer = await post_to(aiohttp_server, redirect)
    assert (answer.verdict, answer.status) == ("refused", status)
    masked = location.replace("s3cr3t-token", "********")
    assert answer.detail == (
        f"redirected, not followed (set remote_write.url to where it leads): {masked}"
    )
    assert elsewhere.bodies == []  # nothing went to the other address


async def test_server_name_is_the_name_the_receivers_certificate_must_carry(
    tmp_path: Path,
) -> None:
    """The receiver's certificate names localhost and 127.0.0.1, not ``other.example``."""
    certs = make_certs(tmp_path)
    receiver = Receiver()
    server = TestServer(receiver.app(), host="127.0.0.1", port=0)
    tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    tls.load_cert_chain(certs.server_cert, certs.server_key)
    await server.start_server(ssl=tls)
    try:
        url = f"https://127.0.0.1:{server.port}/api/v1/write"
        async with aiohttp.ClientSession() as session:
            answers = []
            for name in ("other.example", "localhost", ""):
                settings = RemoteWriteSettings(
                    url=url, tls_config=TlsConfig(ca_file=str(certs.ca), server_name=name)
                )
                answers.append(await Sender(settings, session).post(encode([])))
    finally:
        await server.close()
    wrong, right, unset = answers
    assert (wrong.verdict, wrong.status) == ("retry", 0)
    assert "Hostname mismatch" in wrong.detail  # the certificate lacks the name asked for
    assert (right.verdict, unset.verdict) == ("written", "written")
    assert len(receiver.bodies) == 2
