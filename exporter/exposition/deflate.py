"""Deflate pieces once, join them into one standard gzip member (as pigz does).

Each piece is raw deflate ended with a sync flush (byte-aligned, no final block), so pieces
compressed on their own can be concatenated into one deflate stream; the gzip trailer's CRC-32
is combined from the pieces' CRCs without reading the text again. A fragment is compressed
once when it is first rendered; every later render only joins bytes. The result is a single
ordinary gzip member that any client decodes.
"""

from __future__ import annotations

import functools
import struct
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

# zlib level of a fragment's pieces (docs/performance.md#zlib-level-3-for-a-fragments-pieces)
LEVEL = 3
_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"  # deflate, no name, mtime 0, OS unknown
_FINAL = zlib.compressobj(LEVEL, zlib.DEFLATED, -zlib.MAX_WBITS).flush()  # empty final block
_POLY = 0xEDB88320  # CRC-32, reflected


@dataclass(frozen=True, slots=True)
class Piece:
    """Raw deflate data of some text, with the text's CRC-32 and length."""

    data: bytes
    crc: int
    size: int


def deflate(text: bytes, level: int | None = None) -> Piece:
    """``text`` as a piece that can be joined with others (see ``gzip_join``); at ``LEVEL``
    unless ``level`` says."""
    c = zlib.compressobj(LEVEL if level is None else level, zlib.DEFLATED, -zlib.MAX_WBITS)
    return Piece(c.compress(text) + c.flush(zlib.Z_SYNC_FLUSH), zlib.crc32(text), len(text))


def deflate_chunks(chunks: Iterable[bytes], level: int = LEVEL) -> Piece:
    """Like ``deflate`` for a text given in chunks, never joined in memory."""
    c = zlib.compressobj(level, zlib.DEFLATED, -zlib.MAX_WBITS)
    out: list[bytes] = []
    crc = size = 0
    for chunk in chunks:
        out.append(c.compress(chunk))
        crc = zlib.crc32(chunk, crc)
        size += len(chunk)
    out.append(c.flush(zlib.Z_SYNC_FLUSH))
    return Piece(b"".join(out), crc, size)


def _multmodp(a: int, b: int) -> int:
    """a * b modulo the CRC polynomial (bit-reflected), as zlib's crc32.c does it."""
    m = 1 << 31
    p = 0
    while True:
        if a & m:
            p ^= b
            if not a & (m - 1):
                return p
        m >>= 1
        b = (b >> 1) ^ _POLY if b & 1 else b >> 1


def _powers() -> tuple[int, ...]:
    """x^(2^k) modulo the polynomial, k = 0..31."""
    p = 1 << 30  # x^1
    out = [p]
    for _ in range(31):
        p = _multmodp(p, p)
        out.append(p)
    return tuple(out)


_X2N = _powers()


@functools.lru_cache(maxsize=4096)
def _shift(len2: int) -> int:
    """x^(8 * len2) modulo the polynomial: what moves a CRC past ``len2`` bytes. Kept per
    length: a render joins the same pieces (same lengths) as the one before, mostly."""
    p = 1 << 31  # x^0
    n, k = len2, 3  # x^(8 * len2)
    while n:
        if n & 1:
            p = _multmodp(_X2N[k & 31], p)
        n >>= 1
        k += 1
    return p


_SHORT = 8192  # up to this length, running zlib's CRC over zeros is quicker than _multmodp
_ZEROS = bytes(_SHORT)


@functools.lru_cache(maxsize=8192)
def crc32_combine(crc1: int, crc2: int, len2: int) -> int:
    """CRC-32 of A + B from crc(A), crc(B) and len(B). Kept per argument: a render joins the
    pieces the render before joined, after the same text up to the first that changed."""
    if len2 <= _SHORT:  # crc(A) moved past len(B) zeros, less the zeros' own CRC
        zeros = memoryview(_ZEROS)[:len2]
        return zlib.crc32(zeros, crc1) ^ zlib.crc32(zeros) ^ crc2
    return _multmodp(_shift(len2), crc1) ^ crc2


@dataclass(frozen=True, slots=True)
class Run:
    """Pieces joined in this order, with the CRC-32 and length of their texts together
    (combined once: a render joins a family's run of pieces as one)."""

    pieces: tuple[Piece, ...]
    crc: int
    size: int

    @classmethod
    def of(cls, pieces: tuple[Piece, ...]) -> Run:
        crc = size = 0
        for piece in pieces:
            if piece.size:
                crc = crc32_combine(crc, piece.crc, piece.size)
                size += piece.size
        return cls(pieces, crc, size)


def gzip_join(parts: Sequence[Piece | Run]) -> bytes:
    """One gzip member whose content is the texts of ``parts`` (pieces and runs of them) in
    order."""
    crc = 0
    size = 0
    data: list[bytes] = [_HEADER]
    for part in parts:
        if part.size:
            crc = crc32_combine(crc, part.crc, part.size)
            size += part.size
        if isinstance(part, Run):
            data += [p.data for p in part.pieces]
        else:
            data.append(part.data)
    trailer = struct.pack("<II", crc, size & 0xFFFFFFFF)
    data += (_FINAL, trailer)
    return b"".join(data)


def clear_caches() -> None:
    """Empty the bounded per-argument caches of ``crc32_combine`` and ``_shift`` (at most
    8192 + 4096 entries: what a memory measurement must leave out as it fills)."""
    crc32_combine.cache_clear()
    _shift.cache_clear()
