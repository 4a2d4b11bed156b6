"""Counted values per account: cumulative counters, runs of windows awaiting settle reads, and
the lateness the settle reads measured."""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from exporter.support.collector import untrack
from exporter.traffic.parse import (
    COUNT_INDEX,
    COUNT_KEYS,
    ResourceRow,
    Row,
    Values,
    add_into,
    blank,
    merge,
)
from exporter.traffic.windows import Window, tolerance_minutes

HALVES = ("totals", "resources")  # the two requests of a read: account totals, per resource
OTHER = "__other__"  # the resource label of everything max_resources folded together
EDGE_REQUESTS = COUNT_INDEX["edge_requests_total"]
HIT_BYTES = COUNT_INDEX["edge_hit_bytes"]


@dataclass(slots=True)
class Series:
    """Cumulative counters of one per-resource series (NaN = the upstream never sent the key).

    ``shown`` marks the keys already published with their value (``SHOWN``): a key that gets
    its first value is published at 0 first (``AT_ZERO``) and keeps 0 until a scrape has been
    answered with that 0 (``AccountLedger.zero_seq``), so that ``increase()`` sees its first
    count whenever Prometheus scrapes.
    ``last_seen`` is when the resource was last in a first-read window under its own series.
    It holds strings, numbers and arrays only, so it and its values are left out of the
    collector's passes (``collector.untrack``).
    """

    name: str
    cname: str
    values: Values = field(default_factory=blank)
    last_seen: float = 0.0
    shown: bytearray = field(default_factory=lambda: bytearray(len(COUNT_KEYS)))

    def __post_init__(self) -> None:
        untrack(self, self.values)


SHOWN = 1  # Series.shown: published with its value
AT_ZERO = 2  # published at 0, its value not yet: no scrape was answered with the 0 so far


def shown_mask(values: Values) -> bytearray:
    return bytearray(1 if v == v else 0 for v in values)


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


LATE_PARTS = ("requests", "hit_bytes")  # the lateness counters (scope ``late``)


@dataclass(slots=True)
class Late:
    """What the settle reads at one age added, and the share of the latest run's requests."""

    requests: float = 0.0  # edge requests added, cumulative
    hit_bytes: float = 0.0  # edge hit bytes added, cumulative
    share: float | None = None  # of the latest run settled at this age: added / counted after
    shown: set[str] = field(default_factory=set)  # the LATE_PARTS published (at 0 first)
    held: set[str] = field(default_factory=set)  # of them, those still at 0 (as AT_ZERO)


def requests(values: Values) -> float:
    """Edge requests of a set of counted values (absent = 0)."""
    v = values[EDGE_REQUESTS]
    return v if v == v else 0.0


def positive_diff(new: Values, old: Values | None) -> Values | None:
    """Per key max(0, new - old) with absent as 0; None when nothing increased."""
    out: Values | None = None
    for i, n in enumerate(new):
        if n != n:
            continue
        o = old[i] if old is not None else 0.0
        d = n - (o if o == o else 0.0)
        if d > 0:
            if out is None:
                out = blank(len(new))
            out[i] = d
    return out


def unlisted_rest(totals: Values, resources: Iterable[Values]) -> Values | None:
    """What ``totals`` hold beyond the sum of ``resources``, per key (positive part; None
    when nothing): the traffic of resources a per-resource reply no longer lists."""
    listed = blank(len(totals))
    for values in resources:
        add_into(listed, values)
    return positive_diff(totals, listed)


@dataclass(frozen=True)
class Reread:
    """The halves of a settle read (None: that half was not read this time)."""

    totals: Row | None
    resources: Mapping[str, ResourceRow] | None


@dataclass(frozen=True)
class Terms:
    """How a settle read is settled: the ages runs are read at, the longest run kept
    (``cap_minutes``), whether a resource's increase goes to ``__other__`` (``fold``), whether
    the per-resource half is read, and whether its replies list every resource
    (``unlisted``: at the last read what the totals hold beyond them goes to ``__other__``)."""

    stages: tuple[int, ...]
    cap_minutes: int
    fold: bool = False
    per_resource: bool = True
    unlisted: bool = False


class AccountLedger:
    """Everything one account has accounted: cursor, counters, unsettled runs.

    Memory: one ``array('d')`` of len(COUNT_KEYS) per series and per resource of each run
    (its size: docs/performance.md, "Figures moved out of the traffic code"). Those arrays
    and the series are left out of the collector's passes (``collector.untrack``): a full
    collection visits the few dicts and runs that hold them, not every resource's values.
    """

    __slots__ = (
        "answered_at",
        "cursor",
        "dirty",
        "last_stage_share",
        "late",
        "late_share",
        "long_refused",
        "outage",
        "pending",
        "released_at",
        "released_moved",
        "schedule",
        "series",
        "shaped",
        "slow_cap",
        "slow_until",
        "totals",
        "totals_shown",
        "unpublished",
        "unpublished_late",
        "unshown",
        "zero_seq",
    )

    def __init__(self) -> None:
        self.cursor: int | None = None  # start of the last accounted minute
        self.long_refused = False  # the upstream answered 422 to a window over 1 minute
        self.totals: Values = blank()
        untrack(self.totals)
        self.totals_shown = bytearray(len(COUNT_KEYS))  # as Series.shown, for the totals
        self.unshown = False  # a key is held at 0 (AT_ZERO): a refresh after a scrape shows it
        # The Store.sequence of the publish that showed the newest key held at 0 (-1: not
        # published yet): once a scrape was answered at that sequence, the keys show values.
        self.zero_seq = -1
        # Keys put at 0 by builds not published yet: (mask, values, index), (late, part).
        self.unpublished: list[tuple[bytearray, Values, int]] = []
        self.unpublished_late: list[tuple[Late, str]] = []
        self.series: dict[str, Series] = {}
        self.pending: list[Run] = []
        self.dirty = False  # changed since the last save
        self.slow_cap = 0  # longest window after a 504 or timeout (0 = no limit of its own)
        self.slow_until = 0.0  # when slow_cap stops applying
        self.answered_at = 0.0  # when the platform last answered a read of this account
        self.outage = False  # the last 1-minute read failed (the next read is 1 minute)
        self.released_at = 0.0  # when this replica stopped serving the account (0 = serves)
        self.released_moved = False  # ... because another replica serves it now
        # the settle schedule its pending runs were counted under (saved with the state file):
        # what they finish with when settling is switched off (``policy.stages``)
        self.schedule: tuple[int, ...] = ()
        self.late: dict[int, Late] = {}  # by the age of the settle read, in minutes
        self.late_share: float | None = None  # latest fully settled run: share after first read
        self.last_stage_share: float | None = None  # ... and the share its last stage added
        # Settle reads in pieces keep each piece (``Run.shape``): set while an output of final
        # figures is attached, which shares a final run out by them (``traffic.final``).
        self.shaped = False

    def drop_unpublished(self) -> None:
        """The refreshes that put keys at 0 were held back (counters wait for a state save):
        those keys have not appeared yet, so what they counted so far is dropped; the refresh
        that is published shows them at 0 and they count only what follows (``exposure``)."""
        for _mask, values, i in self.unpublished:
            values[i] = 0.0
        for late, part in self.unpublished_late:
            setattr(late, part, 0.0)

    def published(self) -> None:
        """A fragment of this ledger was published: the keys it put at 0 have appeared."""
        self.unpublished, self.unpublished_late = [], []

    # -- first reads -------------------------------------------------------------------------
    def count_first_read(
        self,
        window: Window,
        totals: Row,
        resources: Iterable[ResourceRow],
        named: frozenset[str] | None,
        now: float,
        settle: tuple[float, int] | None,
        unlisted: bool = False,
    ) -> Values | None:
        """Add a window's values to the counters (own series when ``named`` is None or holds
        the resource, else ``__other__``) and keep them for the settle read.

        ``settle`` is (revisit seconds, longest run in minutes), or None when settling is off:
        then the first read is the last, and with ``unlisted`` (the per-resource half was read
        and lists every resource) what the totals hold beyond the resources is counted under
        ``__other__`` at once and returned (``unlisted_rest``).

        The rows counted are left out of the collector's passes (``collector.untrack``: a
        ``Row`` holds two arrays, a ``ResourceRow`` strings and a ``Row``, both frozen): the
        latest window keeps them for its gauges until the next one replaces them.
        """
        untrack(totals, totals.counts, totals.gauges)
        add_into(self.totals, totals.counts)
        kept: dict[str, Values] = {}
        folded: set[str] = set()
        for r in resources:
            untrack(r, r.row, r.row.counts, r.row.gauges)
            if named is None or r.id in named:
                s = self.series.get(r.id)
                if s is None:
                    s = self.series[r.id] = Series(r.name, r.cname)
                else:
                    s.name, s.cname = r.name, r.cname
            else:
                own = self.series.get(r.id)
                if own is not None:  # its own series still shown (retention): named anew too
                    own.name, own.cname = r.name, r.cname
                s = self._other()
                folded.add(r.id)
            s.last_seen = now
            add_into(s.values, r.row.counts)
            kept[r.id] = r.row.counts
        rest = None
        if settle is not None:
            self._remember(window, totals.counts, kept, frozenset(folded), now, *settle)
        elif unlisted:
            rest = unlisted_rest(totals.counts, kept.values())
            if rest is not None:
                self._other().last_seen = now
                add_into(self._other().values, rest)
        self.cursor = window.last_minute
        self.dirty = True
        return rest

    def _remember(
        self,
        window: Window,
        totals: Values,
        resources: Mapping[str, Values],
        folded: frozenset[str],
        now: float,
        revisit_seconds: float,
        cap_minutes: int,
    ) -> None:
        last = self.pending[-1] if self.pending else None
        if (
            last is not None
            and last.settled == 0
            and not last.done
            and last.end == window.start
            and now < last.first_read_at + revisit_seconds
            and last.minutes + window.minutes <= cap_minutes
        ):
            last.end = window.end
            last.last_read_at = now
            last.folded |= folded  # folded in any of its minutes: late data to __other__
            last.first += requests(totals)
            add_into(last.totals, totals)
            for rid, values in resources.items():
                have = last.resources.get(rid)
                if have is None:
                    last.resources[rid] = have = array("d", values)
                    untrack(have)
                else:
                    add_into(have, values)
            return
        run = Run(window.start, window.end, now, array("d", totals), folded=folded)
        run.first = requests(totals)
        run.resources = {rid: array("d", v) for rid, v in resources.items()}
        untrack(*run.resources.values())
        self.pending.append(run)

    # -- settling ----------------------------------------------------------------------------
    def due(self, now: float, stages: tuple[int, ...], aside: Sequence[Run] = ()) -> Run | None:
        """The run whose settle read is most overdue, not waiting out a backoff (a run whose
        settle reads fail does not hold back the others) nor set ``aside`` by this poll."""
        best: Run | None = None
        best_at = math.inf
        for run in self.pending:
            if aside and any(run is a for a in aside):
                continue
            at = run.due_at(stages)
            if now >= at and now >= run.retry_at and at < best_at:
                best, best_at = run, at
        return best

    def reschedule(self, stages: tuple[int, ...]) -> None:
        """Halves read at an age the schedule no longer reads next (it changed across a
        restart or a reload) are read again at the age it does: nothing read is applied twice,
        nothing owed is skipped."""
        for run in self.pending:
            if run.reading and run.reading != run.next_age(stages):
                run.done, run.pieces, run.reading, run.shape = frozenset(), {}, 0, {}
                self.dirty = True

    def owed_minutes(self, now: float, stages: tuple[int, ...]) -> tuple[int, float]:
        """Minutes whose settle read is due and not yet done, and how long the most overdue
        one has waited past its due time (seconds; 0 when none is owed)."""
        minutes, overdue = 0, 0.0
        for run in self.pending:
            at = run.due_at(stages)
            if now >= at:
                minutes += run.minutes
                overdue = max(overdue, now - at)
        return minutes, overdue

    def settle_piece(
        self, run: Run, window: Window, got: Reread, terms: Terms
    ) -> tuple[bool, bool]:
        """A settle read of ``window``, the whole run or one piece of it (halves not read:
        None). A piece is kept with the others read of its half; a half whose pieces cover
        the run is settled (``settle``). Returns (any counter increased, the read at this age
        is complete)."""
        totals, resources = got.totals, got.resources
        age = run.next_age(terms.stages)
        run.reading = age
        whole = window == run.window
        if totals is not None and not (whole and "totals" not in run.pieces):
            totals = self._totals_piece(run, window, totals)
        elif totals is not None:
            run.shape.pop("totals", None)
        if resources is not None and not (whole and "resources" not in run.pieces):
            resources = self._resources_piece(run, window, resources)
        elif resources is not None:
            run.shape.pop("resources", None)
        self.dirty = True
        if totals is None and resources is None:
            return False, False
        increased = self.settle(run, Reread(totals, resources), terms)
        return increased, run.reading != age or run not in self.pending

    def _pieces(self, run: Run, half: str) -> Pieces:
        """The pieces of ``half`` read so far."""
        p = run.pieces.get(half)
        if p is None:
            p = run.pieces[half] = Pieces(run.start, parts=[] if self.shaped else None)
        return p

    def _totals_piece(self, run: Run, window: Window, totals: Row) -> Row | None:
        """Keep one piece of the totals; their sum once the pieces cover the run."""
        p = self._pieces(run, "totals")
        p.add(window, totals, {})
        if p.to < run.end:
            return None
        del run.pieces["totals"]
        if p.parts is not None:
            run.shape["totals"] = p.parts
        return p.totals

    def _resources_piece(
        self, run: Run, window: Window, resources: Mapping[str, ResourceRow]
    ) -> dict[str, ResourceRow] | None:
        """Keep one piece of the per-resource half; its sum once the pieces cover the run."""
        p = self._pieces(run, "resources")
        p.add(window, None, resources)
        if p.to < run.end:
            return None
        del run.pieces["resources"]
        if p.parts is not None:
            run.shape["resources"] = p.parts
        return p.resources

    def settle(self, run: Run, got: Reread, terms: Terms) -> bool:
        """Add what the re-read of the whole run shows above what was counted (never
        subtract), for the halves read (None: that half was not read this time); once every
        half of the read at its next age is read, move the run on to the age after (merged
        with a contiguous run waiting for it, ``_merge``), or drop it after the last one.
        At the last read, with ``unlisted`` (per-resource replies listing every resource),
        what the run's totals hold beyond its resources (resources the platform dropped from
        its replies after deleting them, with their late data) goes to ``__other__``: the
        resources and ``__other__`` sum to the account.

        An increase of a resource goes where its first read went: ``__other__`` when it was
        folded in that run, else its own series (kept for the retention period, or created
        again when it was removed meanwhile; ``__other__`` when ``fold`` is set).
        Returns whether any counter increased.
        """
        totals, resources, stages = got.totals, got.resources, terms.stages
        increased = False
        age = run.next_age(stages)
        run.reading = age
        done = set(run.done)
        if totals is not None:
            diff = positive_diff(totals.counts, run.totals)
            self._measure(run, diff, age)
            if diff is not None:
                add_into(self.totals, diff)
                add_into(run.totals, diff)
                increased = True
            done.add("totals")
        if resources is not None:
            increased = self._settle_resources(run, resources, terms.fold) or increased
            done.add("resources")
        run.done = frozenset(done)
        run.failures, run.retry_at, run.failed_at, run.failing_since = 0, 0.0, 0.0, 0.0
        self.dirty = True
        if run.owed(terms.per_resource):
            return increased
        run.settled = age
        run.done, run.pieces, run.reading = frozenset(), {}, 0
        if run.next_age(stages) <= age:  # the last age (or past it): settled
            if terms.unlisted and terms.per_resource:
                increased = self._unlisted(run) or increased
            final = requests(run.totals)
            self.late_share = (final - run.first) / final if final > 0 else 0.0
            late = self.late.get(age)
            self.last_stage_share = None if late is None else late.share
            self.drop(run)
        else:
            run.shape = {}  # only the last read's pieces share a final run out
            self._merge(run, terms.cap_minutes, tolerance_minutes(run.next_age(stages), stages))
        return increased

    def _settle_resources(self, run: Run, resources: Mapping[str, ResourceRow], fold: bool) -> bool:
        increased = False
        for rid, r in resources.items():
            have = run.resources.get(rid)
            diff = positive_diff(r.row.counts, have)
            if diff is None:
                continue
            s = self._other() if rid in run.folded else self.series.get(rid)
            if s is None and fold:
                s = self._other()
            elif s is None:
                s = self.series[rid] = Series(r.name, r.cname)
            s.last_seen = max(s.last_seen, run.last_read_at)
            add_into(s.values, diff)
            if have is None:
                run.resources[rid] = have = array("d", diff)
                untrack(have)
            else:
                add_into(have, diff)
            increased = True
        return increased

    def _unlisted(self, run: Run) -> bool:
        """Count what the run's totals hold beyond its resources under ``__other__`` (kept in
        the run under ``__other__`` too, so an output of final figures sums to the account)."""
        rest = unlisted_rest(run.totals, run.resources.values())
        if rest is None:
            return False
        other = self._other()
        other.last_seen = max(other.last_seen, run.last_read_at)
        add_into(other.values, rest)
        have = run.resources.get(OTHER)
        if have is None:
            run.resources[OTHER] = rest
            untrack(rest)
        else:
            add_into(have, rest)
        return True

    def _measure(self, run: Run, diff: Values | None, age: int) -> None:
        """Count what the settle read at ``age`` added (edge requests, hit bytes)."""
        late = self.late.setdefault(age, Late())
        added = 0.0
        if diff is not None:
            added = requests(diff)
            late.requests += added
            late.hit_bytes += diff[HIT_BYTES] if diff[HIT_BYTES] == diff[HIT_BYTES] else 0.0
        after = requests(run.totals) + added
        late.share = added / after if after > 0 else 0.0

    def _merge(self, run: Run, cap_minutes: int, tolerance: int) -> None:
        """Join ``run`` with a contiguous run waiting for the same age, so the later ages read
        windows as long as the platform accepts (a resource folded in either goes on being
        settled under ``__other__``), while the first reads of the joined run lie less than
        ``tolerance`` minutes apart: it is read at the age after its newest first read, so none
        of its minutes is read before its own age, and none ``tolerance`` later."""
        for other in self.pending:
            if (
                other is run
                or other.settled != run.settled
                or other.done
                or other.pieces
                or run.done
                or other.minutes + run.minutes > cap_minutes
                or (other.end != run.start and run.end != other.start)
                or max(other.last_read_at, run.last_read_at)
                - min(other.first_read_at, run.first_read_at)
                >= tolerance * 60
            ):
                continue
            other.start, other.end = min(other.start, run.start), max(other.end, run.end)
            other.folded |= run.folded
            other.last_read_at = max(other.last_read_at, run.last_read_at)
            other.first_read_at = min(other.first_read_at, run.first_read_at)
            other.first += run.first
            add_into(other.totals, run.totals)
            for rid, values in run.resources.items():
                have = other.resources.get(rid)
                if have is None:
                    other.resources[rid] = values
                else:
                    add_into(have, values)
            self.pending.remove(run)
            return

    def _other(self) -> Series:
        s = self.series.get(OTHER)
        if s is None:
            s = self.series[OTHER] = Series(OTHER, "")
        return s

    def drop(self, run: Run) -> None:
        self.pending.remove(run)
        self.dirty = True

    # -- series lifetime ---------------------------------------------------------------------
    def prune(self, oldest: float) -> list[str]:
        """Remove series last seen before ``oldest`` that are owed no settle read."""
        keep: set[str] = set()
        for run in self.pending:
            for rid in run.resources:
                keep.add(OTHER if rid in run.folded else rid)
        gone = [k for k, s in self.series.items() if s.last_seen < oldest and k not in keep]
        for key in gone:
            del self.series[key]
        if gone:
            self.dirty = True
        return gone
