"""Runs of windows read once and awaiting their settle reads: the run, the age its next settle
read is due at, and its halves read piece by piece when it is longer than the platform's
windows."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from exporter.support.collector import untrack
from exporter.traffic.parse import ResourceRow, Row, Values, blank, merge
from exporter.traffic.windows import Window

HALVES = ("totals", "resources")  # the two requests of a read: account totals, per resource


@dataclass(frozen=True, slots=True)
class Part:
    """One piece of a half read piece by piece: its window and the counted values it showed
    (the totals, or each listed resource's)."""

    start: int
    end: int
    totals: Values | None
    resources: Mapping[str, Values]


@dataclass(slots=True)
class Pieces:
    """One half of a settle read of a run longer than the windows the platform answers, read
    piece by piece: the pieces read so far (``to``: where the next one starts), summed. Kept
    until the half is complete, however many polls that takes (in memory: a restart reads the
    half again from the run's start)."""

    to: int
    totals: Row | None = None
    resources: dict[str, ResourceRow] = field(default_factory=dict)
    # each piece as read, in order, when kept (``AccountLedger.shaped``)
    parts: list[Part] | None = None

    def add(self, window: Window, totals: Row | None, resources: Mapping[str, ResourceRow]) -> None:
        if self.parts is not None:
            counts = {rid: r.row.counts for rid, r in resources.items()}
            self.parts.append(
                Part(window.start, window.end, None if totals is None else totals.counts, counts)
            )
        self.to = window.end
        if totals is not None:
            self.totals = totals if self.totals is None else merge((self.totals, totals))
        for rid, r in resources.items():
            seen = self.resources.get(rid)
            self.resources[rid] = (
                r if seen is None else ResourceRow(r.id, r.name, r.cname, merge((seen.row, r.row)))
            )


def next_age(settled: int, stages: tuple[int, ...]) -> int:
    """The age (minutes) of the next settle read after one at ``settled`` (0: none yet): the
    schedule's first age above it; past the schedule's last age (a schedule shortened since),
    ``settled`` itself: one final read, due at once."""
    for age in stages:
        if age > settled:
            return age
    return settled


@dataclass(slots=True)
class Run:
    """Contiguous windows read once and not yet settled, with what was counted for them.

    ``resources`` holds every exported resource's own values (also folded ones), so a settle
    read is compared resource by resource. ``settled`` is the age (minutes after the newest
    first read, ``due_at``) of the last settle read done; the next one is at the schedule's next age
    (``next_age``), so a schedule changed across a restart still reads what is owed. After
    each read the counted values are raised to what it showed. A settle read has two halves
    (totals, per resource) owed separately: ``done`` names the halves already read at
    ``reading`` (the age of the read in progress), so a half postponed by a request budget or
    a rate limit is read later on its own and the other half is not read twice; ``pieces``
    holds the halves being read piece by piece.
    """

    start: int
    end: int
    last_read_at: float  # when the newest window of the run was first read
    totals: Values = field(default_factory=blank)
    resources: dict[str, Values] = field(default_factory=dict)
    # resources counted under __other__ in any minute of this run: their late data goes there
    folded: frozenset[str] = frozenset()
    failures: int = 0  # settle reads that failed while the platform answered other reads
    retry_at: float = 0.0  # no settle read before this time (backoff after a failure)
    failed_at: float = 0.0  # when the last settle read of this run failed
    failing_since: float = 0.0  # first failure since the last settle read that worked (0 = none)
    done: frozenset[str] = frozenset()  # halves ("totals", "resources") read at ``reading``
    settled: int = 0  # age in minutes of the last settle read done (0 = none yet)
    reading: int = 0  # age of the read ``done`` and ``pieces`` belong to (0 = none begun)
    first: float = 0.0  # edge requests its first reads counted
    first_read_at: float = 0.0  # when the oldest window of the run was first read
    pieces: dict[str, Pieces] = field(default_factory=dict)  # halves read in part
    # the pieces of each half of the read at the current age, once complete (not saved: a
    # restart reads a half again from the run's start): how an output of final figures
    # shares the run's figures out over its minutes (``traffic.final``)
    shape: dict[str, list[Part]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.first_read_at:
            self.first_read_at = self.last_read_at
        untrack(self.totals, *self.resources.values())

    def owed(self, per_resource: bool) -> tuple[str, ...]:
        """The halves of the current read still to read, totals first."""
        halves = HALVES if per_resource else HALVES[:1]
        return tuple(h for h in halves if h not in self.done)

    def next_age(self, stages: tuple[int, ...]) -> int:
        return next_age(self.settled, stages)

    def due_at(self, stages: tuple[int, ...]) -> float:
        """When its next settle read is due: that age after its NEWEST first read, at every
        age, so no minute of the run is read before its own age (a joined run waits for its
        newest minute; its older ones are read less than ``tolerance_minutes`` late)."""
        return self.last_read_at + self.next_age(stages) * 60.0

    def next_read(self, per_resource: bool, longest: int) -> tuple[Window, tuple[str, ...]]:
        """The window to read next at this age, and the halves owed that read it (totals
        first): the whole run, or the earliest piece still owed."""
        nexts = {h: self.next_window(h, longest) for h in self.owed(per_resource)}
        w = min(nexts.values(), key=lambda x: x.start)
        return w, tuple(h for h, x in nexts.items() if x == w)

    def next_window(self, half: str, longest: int) -> Window:
        """The window ``half`` reads next: the whole run, or its next piece of ``longest``
        minutes when the run is longer (or is already being read in pieces)."""
        p = self.pieces.get(half)
        start = self.start if p is None else p.to
        return Window(start, min(self.end, start + max(1, longest) * 60))

    @property
    def window(self) -> Window:
        return Window(self.start, self.end)

    @property
    def minutes(self) -> int:
        return (self.end - self.start) // 60

    def _half(self, half: str, shaped: bool) -> Pieces:
        """The pieces of ``half`` read so far (each piece kept as read when ``shaped``)."""
        p = self.pieces.get(half)
        if p is None:
            p = self.pieces[half] = Pieces(self.start, parts=[] if shaped else None)
        return p

    def _covered(self, half: str, p: Pieces) -> bool:
        """Whether the pieces of ``half`` cover the run; once they do they leave ``pieces``,
        each piece as read kept in ``shape``."""
        if p.to < self.end:
            return False
        del self.pieces[half]
        if p.parts is not None:
            self.shape[half] = p.parts
        return True

    def totals_piece(self, window: Window, totals: Row, shaped: bool) -> Row | None:
        """Keep one piece of the totals; their sum once the pieces cover the run."""
        p = self._half("totals", shaped)
        p.add(window, totals, {})
        return p.totals if self._covered("totals", p) else None

    def resources_piece(
        self, window: Window, resources: Mapping[str, ResourceRow], shaped: bool
    ) -> dict[str, ResourceRow] | None:
        """Keep one piece of the per-resource half; its sum once the pieces cover the run."""
        p = self._half("resources", shaped)
        p.add(window, None, resources)
        return p.resources if self._covered("resources", p) else None
