"""Deterministic pseudo-randomness: the same seed and key always give the same numbers."""

from __future__ import annotations

import hashlib

_MASK = (1 << 64) - 1


def key_hash(*parts: object) -> int:
    """A stable 64-bit hash of strings and integers (unlike `hash()`, same across processes)."""
    text = "\x1f".join(str(p) for p in parts).encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "big")


def mix(x: int) -> int:
    """splitmix64 finaliser: a cheap, well-spread integer hash for per-minute values."""
    x = (x + 0x9E3779B97F4A7C15) & _MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK
    return x ^ (x >> 31)


def unit(x: int) -> float:
    """A float in [0, 1) from an integer key."""
    return (mix(x) >> 11) * (1.0 / (1 << 53))


class Stream:
    """A short sequence of deterministic uniforms drawn from one key."""

    __slots__ = ("_state",)

    def __init__(self, key: int) -> None:
        self._state = key & _MASK

    def next(self) -> float:
        self._state = (self._state + 0x9E3779B97F4A7C15) & _MASK
        return unit(self._state)

    def between(self, lo: float, hi: float) -> float:
        return lo + (hi - lo) * self.next()

    def integer(self, lo: int, hi: int) -> int:
        """An integer in [lo, hi]."""
        return lo + int(self.next() * (hi - lo + 1))


def hex_id(*parts: object, length: int = 32) -> str:
    """A stable hexadecimal identifier."""
    text = "\x1f".join(str(p) for p in parts).encode()
    return hashlib.blake2b(text, digest_size=32).hexdigest()[:length]
