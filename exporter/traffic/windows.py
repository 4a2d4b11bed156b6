"""Pure window planning: which closed, minute-aligned windows to read next, and in what chunks."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

MINUTE = 60
MAX_WINDOW_MINUTES = 10  # the metrics API accepts 1 to 10 minutes per request (older docs)
TICK_SECONDS = 15.0  # each account is polled this often


@dataclass(frozen=True, slots=True)
class Window:
    """The minutes [start, end) in Unix seconds, both on minute boundaries."""

    start: int
    end: int

    def __post_init__(self) -> None:
        if self.start % MINUTE or self.end % MINUTE or self.end <= self.start:
            raise ValueError(f"not a minute-aligned window: {self.start}..{self.end}")

    @property
    def minutes(self) -> int:
        return (self.end - self.start) // MINUTE

    @property
    def last_minute(self) -> int:
        return self.end - MINUTE

    def __str__(self) -> str:
        fmt = "%Y-%m-%dT%H:%M"
        a = datetime.fromtimestamp(self.start, UTC).strftime(fmt)
        b = datetime.fromtimestamp(self.end, UTC).strftime(fmt)
        return f"{a}..{b}"


def minute_floor(ts: float) -> int:
    """Start of the UTC minute containing ``ts``."""
    return int(ts // MINUTE) * MINUTE


def last_ready_minute(now: float, delay_seconds: int) -> int:
    """Start of the newest minute M with ``now >= M + 60 + delay`` (closed, and delay passed)."""
    return minute_floor(now - MINUTE - delay_seconds)


def chunks(first: int, last: int, max_minutes: int) -> tuple[Window, ...]:
    """Minutes ``first..last`` (starts, inclusive) as windows of up to ``max_minutes``, oldest
    first; a 25-minute span with 10 gives 10 + 10 + 5."""
    step = max(1, max_minutes) * MINUTE
    end = last + MINUTE
    return tuple(Window(s, min(s + step, end)) for s in range(first, end, step))


@dataclass(frozen=True, slots=True)
class ReadPlan:
    """The first reads of one cycle.

    ``missed`` minutes (older than the catch-up limit) are skipped, starting right after the
    cursor; ``windows`` are then read oldest first. ``backfill`` is True when more than one
    minute is read (outcome ``backfilled`` rather than ``read``).
    """

    missed: int
    windows: tuple[Window, ...]
    backfill: bool

    @property
    def minutes(self) -> int:
        return sum(w.minutes for w in self.windows)


NOTHING = ReadPlan(0, (), False)


def plan_reads(
    cursor: int | None,
    now: float,
    delay_seconds: int,
    catch_up_minutes: int,
    max_window_minutes: int = MAX_WINDOW_MINUTES,
) -> ReadPlan:
    """Plan the first reads after ``cursor`` (start of the last accounted minute; None = none).

    Without a cursor only the newest ready minute is read (no history). The newest ready
    minute is always read; of the older unaccounted minutes at most ``catch_up_minutes`` are
    backfilled and the rest are missed.
    """
    last = last_ready_minute(now, delay_seconds)
    if cursor is None:
        return ReadPlan(0, (Window(last, last + MINUTE),), False)
    first = cursor + MINUTE
    if first > last:
        return NOTHING
    new = (last - first) // MINUTE + 1
    keep = min(new, max(0, catch_up_minutes) + 1)
    first += (new - keep) * MINUTE
    return ReadPlan(new - keep, chunks(first, last, max_window_minutes), keep > 1)


def settle_cap_minutes(revisit_minutes: int, long_windows: bool) -> int:
    """Longest run of windows re-read as one request at the first age: revisit_minutes (its
    first reads less than revisit minutes apart, so every minute is settled less than
    2 x revisit minutes after its first read), at most 10, and 1 where long windows are
    refused."""
    if not long_windows:
        return 1
    return max(1, min(revisit_minutes, MAX_WINDOW_MINUTES))


def tolerance_minutes(age: int, stages: tuple[int, ...]) -> int:
    """How much later than ``age`` a minute may be read at a later age because it is read in
    one window with newer minutes (a joined run is due when its newest minute is): the first
    age (a run gathers up to that many minutes of first reads), at least 2, and a quarter of
    the age (so later ages still read 10-minute windows). A minute is never read before it."""
    first = stages[0] if stages else age
    return max(first, 2, -(-age // 4))


def settle_window_minutes(age: int, stages: tuple[int, ...], longest: int) -> int:
    """Minutes a settle read at ``age`` covers in steady state (first reads a minute apart):
    runs of the first age's minutes (at most ``longest``), joined at a later age while the
    joined first reads lie less than ``tolerance_minutes`` apart and the window fits
    ``longest``."""
    first = max(1, min(stages[0], longest))
    if age == stages[0]:
        return first
    joined = min(tolerance_minutes(age, stages) // first, longest // first)
    return first * max(1, joined)
