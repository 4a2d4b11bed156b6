"""One remote-write request and what its answer means (the protocol's retry rules).

2xx: written. 400: the request holds bad samples (the writer splits it to find the series and
writes the rest). A 400 or 5xx whose body says ``too old`` or ``out of bounds``: the
receiver's window has passed the sample, for good. Any other 4xx (401, 403, 404, 405, 413...)
and any 3xx: the receiver or the way to it is wrong, not the samples (``refused``): nothing is
split or dropped, the minute stays pending and is retried after a backoff. Anything else (5xx,
429, a timeout, no connection): retried later with the same bytes.

The receiver is not trusted further than that: redirects are not followed (a 303 would turn
the write into a GET elsewhere), at most ``ANSWER_BYTES`` of an answer are read (the rest is
dropped with the connection), and what it says is shown with the URLs in it masked.
"""

from __future__ import annotations

import base64
import ssl
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urljoin

import aiohttp

from exporter.config.secretfiles import SecretFileError, read_secret
from exporter.remotewrite.settings import RemoteWriteSettings, ssl_context
from exporter.remotewrite.wire import CONTENT_TYPE, ENCODING, VERSION
from exporter.support.offloop import aside
from exporter.support.secrets import plain_mask
from exporter.support.urls import mask_url, mask_urls

Verdict = Literal["written", "bad", "too_old", "refused", "retry"]
TOO_OLD_MARKERS = ("too old", "too-old", "out of bounds", "out of order")
ANSWER_BYTES = 512  # of an answer's body, kept for the log; never more is read


@dataclass(frozen=True, slots=True)
class Answer:
    verdict: Verdict
    status: int  # 0: no HTTP answer
    detail: str  # the receiver's message (cut short) or the error


def verdict(status: int, body: str) -> Verdict:
    if 200 <= status < 300:
        return "written"
    if status == 400 or status >= 500:
        if any(m in body.lower() for m in TOO_OLD_MARKERS):
            return "too_old"
        return "bad" if status == 400 else "retry"
    if status == 429:
        return "retry"
    return "refused"  # 3xx, 401, 403, 404, 405...: the receiver's set-up, not the samples


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
        self._server_name = settings.tls_config.server_name or None

    async def post(self, body: bytes) -> Answer:
        headers = {
            "Content-Type": CONTENT_TYPE,
            "Content-Encoding": ENCODING,
            "X-Prometheus-Remote-Write-Version": VERSION,
        }
        try:
            auth = await aside(auth_header, self._s)
        except SecretFileError as exc:
            return Answer("retry", 0, str(exc))
        if auth is not None:
            headers["Authorization"] = auth
        timeout = aiohttp.ClientTimeout(total=self._s.timeout_seconds)
        try:
            async with self._session.post(
                self._s.url,
                data=body,
                headers=headers,
                timeout=timeout,
                ssl=self._ssl,
                server_hostname=self._server_name,
                allow_redirects=False,
            ) as resp:
                if 300 <= resp.status < 400:
                    resp.close()
                    where = urljoin(self._s.url, resp.headers.get("Location", ""))
                    return Answer(
                        "refused",
                        resp.status,
                        "redirected, not followed (set remote_write.url to where it leads): "
                        + mask_url(where, plain_mask),
                    )
                text = (await _head(resp)).decode("utf-8", "replace").strip()
                return Answer(verdict(resp.status, text), resp.status, _masked(text))
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            return Answer("retry", 0, _masked(f"{type(exc).__name__}: {exc}")[:200])


async def _head(resp: aiohttp.ClientResponse) -> bytes:
    """The first ANSWER_BYTES of the body; a longer body is cut off with its connection."""
    chunks: list[bytes] = []
    size = 0
    while size < ANSWER_BYTES:
        chunk = await resp.content.read(ANSWER_BYTES - size)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
    if not resp.content.at_eof():
        resp.close()  # the rest is never read: the connection goes with it
    return b"".join(chunks)


def _masked(text: str) -> str:
    return mask_urls(text, plain_mask)
