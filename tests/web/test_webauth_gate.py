"""The gate under attack: trust-store reloads, basic auth under a flood of guesses, the
OpenAPI document behind credentials, no version in ``Server`` (issues 26.4, 26.5, 26.8,
26.10 and 30.1)."""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path

import aiohttp
import pytest

from exporter.web import webauth

from .test_serving_listener import PASSWORD, READ_TOKEN, USER, BcryptSpy, Start, spy, start
from .tls_certs import make_certs

__all__ = ["spy", "start"]  # fixtures, used by name


# --- 26.4: a reload replaces the trust store ----------------------------------------------
def concatenate(target: Path, *pems: Path) -> None:
    target.write_bytes(b"".join(p.read_bytes() for p in pems))


async def test_a_client_ca_removed_from_the_file_is_refused_after_the_reload(
    start: Start, tmp_path: Path
) -> None:
    other = make_certs(tmp_path / "other", ca_name="other CA")  # its own client certificate
    both = tmp_path / "clients.crt"
    concatenate(both, tmp_path / "ca.crt", other.ca)
    verify = {"client_auth_type": "RequireAndVerifyClientCert", "client_ca_file": "clients.crt"}
    served = await start(tls_server_config=verify, basic_auth_users=None)

    def client(cert: Path, key: Path) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(served.certs.ca))
        ctx.load_cert_chain(cert, key)
        return ctx

    first = client(served.certs.client_cert, served.certs.client_key)
    second = client(other.client_cert, other.client_key)
    for ctx in (first, second):
        served.client_ssl = ctx
        assert (await served.get("/healthz"))[0] == 200
    concatenate(both, tmp_path / "ca.crt")  # the other CA taken away
    assert served.live.check()
    served.client_ssl = second
    with pytest.raises(aiohttp.ClientError):  # a real handshake, refused
        await served.get("/healthz")
    served.client_ssl = first
    assert (await served.get("/healthz"))[0] == 200


# --- 26.5: basic auth under a flood of guesses -------------------------------------------
async def test_a_cached_password_answers_while_hundreds_of_guesses_are_in_flight(
    start: Start, spy: BcryptSpy
) -> None:
    served = await start()
    assert (await served.get("/metrics", auth=(USER, PASSWORD)))[0] == 200
    spy.gate.clear()  # every wrong guess now hangs inside bcrypt
    guesses = [
        asyncio.create_task(served.get("/metrics", auth=(USER, f"guess {n}"))) for n in range(300)
    ]
    try:
        for _ in range(webauth.BCRYPT_WORKERS):  # the workers are all busy with guesses
            assert await asyncio.to_thread(spy.entered.acquire, True, 30)
        status, body, _ = await asyncio.wait_for(
            served.get("/metrics", auth=(USER, PASSWORD)), timeout=20
        )
        assert status == 200
        assert "cdnvideo_exporter_build_info{" in body
        assert not any(g.done() and g.result()[0] == 401 for g in guesses)  # still in flight
        assert spy.most == webauth.BCRYPT_WORKERS  # bcrypt work for guesses bounded
        spy.gate.set()
        statuses = [s for s, _, _ in await asyncio.gather(*guesses)]
        assert set(statuses) <= {401, 429}
        assert statuses.count(401) >= webauth.BCRYPT_QUEUE  # queued ones checked, others 429
    finally:  # nothing left running when an assertion failed
        spy.gate.set()
        for guess in guesses:
            guess.cancel()
        await asyncio.gather(*guesses, return_exceptions=True)
    # 300 distinct wrong guesses later, the right password still needs no bcrypt check
    before = len(spy.hashes)
    assert (await served.get("/metrics", auth=(USER, PASSWORD)))[0] == 200
    assert len(spy.hashes) == before


# --- 26.8: only the probes are open --------------------------------------------------------
async def test_the_openapi_document_needs_a_password_or_a_token(start: Start) -> None:
    served = await start()
    status, body, _ = await served.get("/api/v1/openapi.json")
    assert status == 401
    assert "demo-media" not in body
    wrong, _, _ = await served.get("/api/v1/openapi.json", Authorization="Bearer not-a-token-x")
    assert wrong == 401
    for headers in ({"Authorization": f"Bearer {READ_TOKEN}"}, {}):
        auth = None if headers else (USER, PASSWORD)
        status, body, _ = await served.get("/api/v1/openapi.json", auth=auth, **headers)
        assert status == 200
        assert "demo-media" in body


async def test_only_the_probes_answer_without_credentials(start: Start) -> None:
    served = await start()
    assert (await served.get("/healthz"))[0] == 200
    assert (await served.get("/readyz"))[1] in ('{"ready": false}', '{"ready": true}')
    for path in ("/metrics", "/", "/api/v1/openapi.json", "/nowhere"):
        assert (await served.get(path))[0] == 401, path


# --- 26.10: no version in Server ------------------------------------------------------------
async def test_no_reply_names_a_version_in_server(start: Start) -> None:
    served = await start()
    for path, auth in (("/healthz", None), ("/metrics", None), ("/metrics", (USER, PASSWORD))):
        _, _, headers = await served.get(path, auth=auth)
        assert headers["Server"] == "cdnvideo-exporter", path
