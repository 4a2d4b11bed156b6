"""One remote-write request and what its answer means (the protocol's retry rules).

2xx: written. 4xx other than 429: the request is bad and will stay bad (never retried as it
is; a 400 is split by the writer to find the series). A 5xx whose body says ``too old`` or
``out of bounds``: the receiver's window has passed the sample, also for good. Anything else
(5xx, 429, a timeout, no connection): retried later with the same bytes.
"""

from __future__ import annotations

import asyncio
import base64
import ssl
from dataclasses import dataclass
from typing import Literal

import aiohttp

from exporter.config.secretfiles import SecretFileError, read_secret
from exporter.remotewrite.settings import RemoteWriteSettings
from exporter.remotewrite.wire import CONTENT_TYPE, ENCODING, VERSION

Verdict = Literal["written", "bad", "too_old", "retry"]
TOO_OLD_MARKERS = ("too old", "too-old", "out of bounds", "out of order")


@dataclass(frozen=True, slots=True)
class Answer:
    verdict: Verdict
    status: int  # 0: no HTTP answer
    detail: str  # the receiver's message (cut short) or the error


def verdict(status: int, body: str) -> Verdict:
    if 200 <= status < 300:
        return "written"
    text = body.lower()
    if any(m in text for m in TOO_OLD_MARKERS) and status != 429:
        return "too_old"
    if 400 <= status < 500 and status != 429:
        return "bad"
    return "retry"


def ssl_context(s: RemoteWriteSettings) -> ssl.SSLContext | None:
    tls = s.tls_config
    if not s.url.startswith("https:"):
        return None
    ctx = ssl.create_default_context(cafile=tls.ca_file or None)
    if tls.insecure_skip_verify:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if tls.cert_file:
        ctx.load_cert_chain(tls.cert_file, tls.key_file)
    return ctx


def _read(key: str, path: str) -> str:
    try:
        return read_secret(path).strip()
    except SecretFileError as exc:
        raise SecretFileError(f"remote_write.{key}: {exc}") from None


def auth_header(s: RemoteWriteSettings) -> str | None:
    """The Authorization header; token and password files are read on every request, so a
    rotated secret is used from the next request on (SecretFileError naming the key when a
    file cannot be read; blocks for at most the secret files' deadline: call it off the
    event loop)."""
    if s.bearer_token:
        return f"Bearer {s.bearer_token}"
    if s.bearer_token_file:
        return f"Bearer {_read('bearer_token_file', s.bearer_token_file)}"
    auth = s.basic_auth
    if auth.username:
        password = (
            _read("basic_auth.password_file", auth.password_file)
            if auth.password_file
            else auth.password
        )
        pair = f"{auth.username}:{password}".encode()
        return f"Basic {base64.b64encode(pair).decode()}"
    return None


class Sender:
    """Posts request bodies to ``remote_write.url`` over its own session."""

    def __init__(self, settings: RemoteWriteSettings, session: aiohttp.ClientSession) -> None:
        self._s = settings
        self._session = session
        self._ssl: ssl.SSLContext | bool = ssl_context(settings) or True

    async def post(self, body: bytes) -> Answer:
        headers = {
            "Content-Type": CONTENT_TYPE,
            "Content-Encoding": ENCODING,
            "X-Prometheus-Remote-Write-Version": VERSION,
        }
        try:
            auth = await asyncio.to_thread(auth_header, self._s)
        except SecretFileError as exc:
            return Answer("retry", 0, str(exc))
        if auth is not None:
            headers["Authorization"] = auth
        timeout = aiohttp.ClientTimeout(total=self._s.timeout_seconds)
        try:
            async with self._session.post(
                self._s.url, data=body, headers=headers, timeout=timeout, ssl=self._ssl
            ) as resp:
                text = (await resp.read())[:512].decode("utf-8", "replace").strip()
                return Answer(verdict(resp.status, text), resp.status, text)
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            return Answer("retry", 0, f"{type(exc).__name__}: {exc}"[:200])
