"""Injected time: every component asks a Clock, so tests move time without sleeping."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    """A source of wall-clock time as Unix seconds, and a monotonic clock beside it (never
    stepped, its origin arbitrary) that shows when the wall clock was stepped."""

    def time(self) -> float: ...

    def monotonic(self) -> float: ...


class SystemClock:
    """The real wall clock."""

    def time(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()


class FakeClock:
    """A clock that only moves when told to (tests, simulated days)."""

    def __init__(self, start: float = 1_767_225_600.0) -> None:  # 2026-01-01T00:00:00Z
        self._now = float(start)
        self._stepped = 0.0  # what ``step`` moved the wall clock by (not time passing)

    def time(self) -> float:
        return self._now

    def monotonic(self) -> float:
        """Moves with ``advance`` and ``set`` (time passing), not with ``step``."""
        return self.time() - self._stepped

    def step(self, seconds: float) -> None:
        """Step the wall clock (either sign) while no time passes: an NTP step."""
        self._now += seconds
        self._stepped += seconds

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("a clock does not go backwards")
        self._now += seconds

    def set(self, now: float) -> None:
        self._now = float(now)
