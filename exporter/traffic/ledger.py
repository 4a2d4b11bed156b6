"""One account's ledger: its cursor and counters, the first reads counted into them, the
settle reads that raise them and the runs they settle, and the series it prunes."""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from exporter.support.collector import untrack
from exporter.traffic.counters import (
    HIT_BYTES,
    Late,
    Series,
    positive_diff,
    requests,
    unlisted_rest,
)
from exporter.traffic.parse import COUNT_KEYS, ResourceRow, Row, Values, add_into, blank
from exporter.traffic.runs import Run
from exporter.traffic.windows import Window, tolerance_minutes

OTHER = "__other__"  # the resource label of everything max_resources folded together


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
            totals = run.totals_piece(window, totals, self.shaped)
        elif totals is not None:
            run.shape.pop("totals", None)
        if resources is not None and not (whole and "resources" not in run.pieces):
            resources = run.resources_piece(window, resources, self.shaped)
        elif resources is not None:
            run.shape.pop("resources", None)
        self.dirty = True
        if totals is None and resources is None:
            return False, False
        increased = self.settle(run, Reread(totals, resources), terms)
        return increased, run.reading != age or run not in self.pending

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
