"""Injected time: every component asks a Clock, so tests move time without sleeping."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    """A source of wall-clock time as Unix seconds."""

    def time(self) -> float: ...


class SystemClock:
    """The real wall clock."""

    def time(self) -> float:
        return time.time()


class FakeClock:
    """A clock that only moves when told to (tests, simulated days)."""

    def __init__(self, start: float = 1_767_225_600.0) -> None:  # 2026-01-01T00:00:00Z
        self._now = float(start)

    def time(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("a clock does not go backwards")
        self._now += seconds

    def set(self, now: float) -> None:
        self._now = float(now)
