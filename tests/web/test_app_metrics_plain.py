"""A plain (not gzip) ``/metrics`` body is the gzip body's text, decompressed and sent a chunk
at a time (``app.PLAIN_CHUNK``): a plain scrape never holds the whole text."""

from __future__ import annotations

import gzip
import tracemalloc
import zlib
from typing import Any

import aiohttp
import pytest

from exporter.exposition import FragmentBuilder, MetricSpec, Store, StoreKey
from exporter.exposition.formats import OPENMETRICS_EOF
from exporter.web import app as web_app
from tests.rig.daemon import StartDaemon
from tests.web.bare import bare_daemon

SPEC = MetricSpec("cdnvideo_test_things", "gauge", "Things.", ("account", "resource"))
PLAIN = {"Accept-Encoding": "identity"}
OPENMETRICS = "application/openmetrics-text;version=1.0.0"


async def _client(start_daemon: StartDaemon, series: int) -> tuple[aiohttp.ClientSession, Any]:
    async def fill(store: Store) -> None:
        b = FragmentBuilder()
        for i in range(series):
            b.add(SPEC, ("acc", f"resource-{i:07d}"), i * 0.5)
        store.publish(StoreKey("test", "acc"), b.build())
        await store.render()

    daemon, store = await bare_daemon(start_daemon, before_start=fill)
    return daemon.client, store.exposition


@pytest.mark.parametrize("accept", ["", OPENMETRICS])
async def test_a_plain_body_of_many_chunks_is_the_gzip_body_decompressed(
    start_daemon: StartDaemon, monkeypatch: pytest.MonkeyPatch, accept: str
) -> None:
    monkeypatch.setattr(web_app, "PLAIN_CHUNK", 4096)
    client, exposition = await _client(start_daemon, 5000)
    headers = {**PLAIN, "Accept": accept} if accept else PLAIN
    plain = await client.get("/metrics", headers=headers)
    gzipped = await client.get("/metrics", headers={**headers, "Accept-Encoding": "gzip"})
    body = await plain.read()
    assert plain.status == 200
    assert "Content-Encoding" not in plain.headers
    assert plain.headers["Content-Type"] == gzipped.headers["Content-Type"]
    assert body == await gzipped.read()  # the client decompresses the gzip one
    assert len(body) > 50 * 4096
    assert b'cdnvideo_test_things{account="acc",resource="resource-0004999"} 2499.5\n' in body
    assert body.endswith(OPENMETRICS_EOF) == bool(accept)
    fmt = "openmetrics" if accept else "text"
    assert body == gzip.decompress(exposition.compressed(fmt))


async def test_a_small_plain_body_is_sent_whole_with_its_length(
    start_daemon: StartDaemon,
) -> None:
    client, _ = await _client(start_daemon, 3)
    reply = await client.get("/metrics", headers=PLAIN)
    body = await reply.read()
    assert reply.headers["Content-Length"] == str(len(body))
    assert body.count(b"cdnvideo_test_things{") == 3


async def test_a_plain_scrape_holds_a_chunk_of_the_text_not_the_whole(
    start_daemon: StartDaemon, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(web_app, "PLAIN_CHUNK", 1 << 18)
    client, exposition = await _client(start_daemon, 150_000)
    size = len(gzip.decompress(exposition.gzipped))
    assert size > 8 * web_app.PLAIN_CHUNK
    crc = received = 0
    tracemalloc.start()
    try:
        reply = await client.get("/metrics", headers=PLAIN)
        async for chunk in reply.content.iter_chunked(1 << 16):
            crc = zlib.crc32(chunk, crc)
            received += len(chunk)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert received == size
    assert crc == zlib.crc32(gzip.decompress(exposition.gzipped))
    assert peak < size / 4, f"a plain scrape of {size} bytes held {peak} bytes at its peak"


@pytest.mark.parametrize("size", [0, 1, 4095, 4096, 4097, 300_000])
def test_the_text_comes_in_chunks_of_at_most_plain_chunk_bytes(
    monkeypatch: pytest.MonkeyPatch, size: int
) -> None:
    monkeypatch.setattr(web_app, "PLAIN_CHUNK", 4096)
    text = bytes(i * 7 % 251 for i in range(size // 2)) + b"z" * (size - size // 2)
    inflate = web_app._Inflate(gzip.compress(text, 3))
    chunks = []
    while not inflate.done:
        chunks.append(inflate.chunk())
    assert b"".join(chunks) == text
    assert all(len(c) == 4096 for c in chunks[:-1])
    assert len(chunks[-1]) <= 4096


def test_a_cut_body_ends_the_text_where_it_ends() -> None:
    text = bytes(range(256)) * 4000
    inflate = web_app._Inflate(gzip.compress(text)[:-4000])
    chunks = [inflate.chunk() for _ in range(100) if not inflate.done]
    assert inflate.done
    assert text.startswith(b"".join(chunks))
    assert len(chunks) < 100
