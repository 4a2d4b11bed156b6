"""Pieces compressed once and joined into one standard gzip member; fragments packed once."""

from __future__ import annotations

import gzip
import random
import zlib

import pytest

from exporter.exposition import FragmentBuilder, MetricSpec, Store, StoreKey
from exporter.exposition import deflate as deflate_module
from exporter.exposition.deflate import (
    Piece,
    Run,
    crc32_combine,
    deflate,
    deflate_chunks,
    gzip_join,
)
from exporter.exposition.model import Fragment, render_chunks, render_samples
from exporter.exposition.samples import CHUNK
from exporter.support.clock import FakeClock

SPEC = MetricSpec("cdnvideo_x", "gauge", "x.", ("account", "resource", "side"))


@pytest.mark.parametrize("seed", range(5))
def test_joined_pieces_are_one_gzip_member_of_the_whole_text(seed: int) -> None:
    rnd = random.Random(seed)
    texts = [rnd.randbytes(rnd.randint(0, 2000)) + b"abc" * rnd.randint(0, 3000) for _ in range(20)]
    body = gzip_join([deflate(t) for t in texts])
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)  # one member, nothing after it
    assert d.decompress(body) == b"".join(texts)
    assert d.eof
    assert d.unused_data == b""


def test_nothing_joined_is_an_empty_gzip_body() -> None:
    assert gzip.decompress(gzip_join([])) == b""
    assert gzip.decompress(gzip_join([deflate(b""), deflate(b"")])) == b""


@pytest.mark.parametrize(
    ("a", "b"),
    [
        (b"", b"x"),
        (b"hello ", b"world"),
        (b"a" * 70000, b""),
        (b"hello ", b"b" * 8192),  # the longest B combined over zeros
        (b"hello ", b"b" * 8193),  # the shortest B combined by the polynomial's powers
        (b"c" * 9, bytes(range(256)) * 300),
    ],
)
def test_crc_of_a_concatenation_is_combined_from_the_parts(a: bytes, b: bytes) -> None:
    assert crc32_combine(zlib.crc32(a), zlib.crc32(b), len(b)) == zlib.crc32(a + b)


def test_a_fragment_is_rendered_and_compressed_once() -> None:
    b = FragmentBuilder()
    b.add(SPEC, ("acme", "1", "edge"), 1.5)
    frag = b.build()
    assert frag.packed() is frag.packed()
    s = Store(FakeClock())
    s.publish(StoreKey("traffic", "acme"), frag)
    first, second = s.render_sync(), s.render_sync()
    assert first.gzipped == second.gzipped
    assert first.plain.endswith(b'cdnvideo_x{account="acme",resource="1",side="edge"} 1.5\n')


def test_memoised_rendering_matches_pair_by_pair_formatting() -> None:
    rows = [
        ((acc, res, side), value)
        for acc in ('a"c', "b\\d")
        for res in ("1", "2\n")
        for side in ("edge", "origin")
        for value in (0.0, 3.0, 0.25, 1e20, float("nan"), float("inf"), 7)
    ]
    text = render_samples(SPEC, rows).decode()
    first = text.splitlines()[0]
    assert first == 'cdnvideo_x{account="a\\"c",resource="1",side="edge"} 0'
    assert 'resource="2\\n",side="origin"} +Inf' in text
    assert text.count("\n") == len(rows)
    assert "} 1e+20\n" in text
    assert "} 7\n" in text


def test_chunked_rendering_and_compression_equal_the_whole_text() -> None:
    rows = [(("acme", str(i), "edge"), float(i)) for i in range(5000)]
    chunks = list(render_chunks(SPEC, rows, lines=700))
    assert len(chunks) == 8
    assert b"".join(chunks) == render_samples(SPEC, rows)
    piece = deflate_chunks(chunks)
    assert piece == deflate(render_samples(SPEC, rows))
    assert gzip.decompress(gzip_join([piece])) == render_samples(SPEC, rows)


def test_families_without_labels_render_one_line_per_sample() -> None:
    spec = MetricSpec("cdnvideo_y", "gauge", "y.")
    assert render_samples(spec, [((), 1.0), ((), 2.5)]) == b"cdnvideo_y 1\ncdnvideo_y 2.5\n"


def test_a_render_joining_the_pieces_joined_before_combines_no_crc_again() -> None:
    """Each render joins mostly the pieces the render before joined, after the same text: the
    CRC-32s combined then are kept, not computed again (pieces past 8 kB cost a polynomial
    product in Python each)."""
    text = [b"a" * 20_000, b"b" * 100, b"c" * 9_000]
    pieces = [deflate(t) for t in text]
    crc32_combine.cache_clear()
    first = gzip_join(pieces)
    computed = crc32_combine.cache_info().misses
    assert computed == 3
    assert gzip_join(pieces) == first
    assert crc32_combine.cache_info().misses == computed
    assert gzip.decompress(first) == b"".join(text)


@pytest.mark.parametrize("seed", range(5))
def test_runs_of_pieces_join_to_the_body_of_the_pieces_one_by_one(seed: int) -> None:
    rnd = random.Random(seed)
    pieces = [deflate(rnd.randbytes(rnd.randint(0, 12_000))) for _ in range(rnd.randint(0, 12))]
    parts: list[Piece | Run] = []
    i = 0
    while i < len(pieces):
        n = rnd.randint(1, 4)
        parts.append(Run.of(tuple(pieces[i : i + n])) if rnd.random() < 0.7 else pieces[i])
        i += n if isinstance(parts[-1], Run) else 1
    assert gzip_join(parts) == gzip_join(pieces)


def test_a_render_after_one_fragment_changed_combines_no_crc_of_the_others_pieces(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A change early in the body moves the running CRC of everything after it: the CRC-32s
    of an unchanged fragment's pieces are combined once per family (``deflate.Run``), and a
    later render combines the run's, not each piece's again."""

    def fragment(value: float) -> Fragment:
        b = FragmentBuilder()
        for i in range(5 * CHUNK):
            b.add(SPEC, ("acme", str(i), "edge"), value + i)
        return b.build()

    s = Store(FakeClock())
    s.publish(StoreKey("traffic", "a"), fragment(1.5))
    later = fragment(7.25)
    s.publish(StoreKey("traffic", "b"), later)
    s.render_sync()
    pieces = later.packed()[SPEC]
    assert len(pieces) == 5
    seen: list[int] = []
    combine = deflate_module.crc32_combine

    def spy(crc1: int, crc2: int, len2: int) -> int:
        seen.append(crc2)
        return combine(crc1, crc2, len2)

    monkeypatch.setattr(deflate_module, "crc32_combine", spy)
    s.publish(StoreKey("traffic", "a"), fragment(2.5))
    exposition = s.render_sync()
    assert seen, "the changed fragment's CRCs are combined"
    assert not {p.crc for p in pieces} & set(seen)
    assert exposition.plain.endswith(
        b'cdnvideo_x{account="acme",resource="9999",side="edge"} 10006.25\n'
    )
    assert exposition.plain.count(b"\n") == 2 + 2 * 5 * CHUNK
