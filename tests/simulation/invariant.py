"""The invariant of a simulated day, checked at every scrape and at the end (issue 35).

A violation is a kind (one of ``KINDS``) and one line of detail, so a failing seed reads as
one line per kind. What each kind means, and the tolerances, are in docs/dev/testing.md.

The platform's truth is computed from the simulator's own model: a minute's figures as
visible at time t are the final per-resource rows scaled by the late-arrival curve, floored
per resource as the API floors them (``exporter/simulator/traffic_window.py``). The reads
the daemon made are the transport's record (``transport.Read``): which window, which half
(totals or per resource), when on the platform's clock, and whether it was answered.
"""

from __future__ import annotations

import bisect
import functools
import math
import re
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from exporter.simulator.churn import Change
from exporter.simulator.revision import EDGE_200, revised_minutes
from exporter.simulator.traffic_model import EDGE_2XX, EDGE_BW, EDGE_REQ
from exporter.simulator.traffic_window import COLUMN_KEYS, late_fraction
from tests.simulation.promwire import decode
from tests.simulation.scenario import T0, Daemon, Event, Scenario

if TYPE_CHECKING:
    from exporter.simulator import Simulator
    from tests.simulation.transport import Read, Transport

Key = tuple[str, tuple[tuple[str, str], ...]]
MINUTE = 60

KINDS = {
    "read before close": "a metrics request asked for a minute not yet closed on the platform",
    "counter decreased": "a counter series went down between two scrapes (restarts included)",
    "series born nonzero": "a counter series was first exposed at a value other than 0",
    "series jump": "a series rose by more than the platform counted after it appeared",
    "miscounted": "a counter differs from the figures of the reads the daemon made",
    "resources off the account": "at the end, a family's resource series (__other__ "
    "included) do not sum to its account series as the reads of the two halves say",
    "silent minutes": "minutes neither read nor named by a self-metric (missed)",
    "early settle read": "a minute's read at an age of its schedule came before that age",
    "late settle read": "a minute's settle read came later than its age plus the tolerance",
    "settle read missing": "a minute was not re-read at an age of its schedule",
    "not final": "a minute's last read came before its figures were final, though the "
    "schedule reaches past the platform's lateness",
    "silent stall": "nothing was counted for a while and neither up nor the lag said so",
    "series vanished": "a resource's counter series shown earlier is gone at the end while "
    "its account's resource series are shown (deleted resources included)",
    "stale resource name": "at the end, a resource renamed a while ago is not named anew by "
    "cdnvideo_resource_info, or is named twice",
    "owed misreported": "at the end, cdnvideo_traffic_windows_owed differs from the minutes "
    "still owed a settle read",
    "remote write off": "a minute's remote-write samples differ from the figures of its last "
    "read (a run of several minutes: their sum), or a minute was written twice with another "
    "value, or a minute never read was written",
    "remote write missing": "a minute read at every age of its schedule was not written by "
    "remote write, and no outcome of cdnvideo_traffic_windows_total names it",
    "lateness off": "the account's edge requests (or edge hit bytes) less what the lateness "
    "counters say the settle reads added differ from what the first reads of its minutes "
    "showed",
    "audit off": "under the quirk revise-after-settle, the standing audit's differing "
    "seconds are not those of the windows it read that the platform revised after their last "
    "read",
    "audit false alarm": "the standing audit reported traffic that differs "
    '(cdnvideo_traffic_audit_seconds_total{result="differs"}) where the platform revised '
    "nothing and every minute was counted at its final figures",
}
AUDIT = "cdnvideo_traffic_audit_seconds_total"
# Findings that leave a minute counted short of its final figures: the audit rightly finds it.
COUNTED_SHORT = frozenset({"not final", "miscounted", "late settle read", "settle read missing"})
STALL_SECONDS = 900.0  # nothing counted this long: cdnvideo_up 0 or the lag alert must show it
LAG_ALERT_SECONDS = 420.0  # deploy/prometheus/rules.yml CdnvideoTrafficDataStale
JUMP_WINDOW_SECONDS = 1800.0  # a new series' rises are checked for this long after it appears
EARLY_SECONDS = 2.0  # a read at an age may come this early: the clocks' rounding, no more
LONGEST_WINDOW_MINUTES = 10  # docs/windowing.md: first reads and settle reads, 10 minutes at most
TICK_SLACK_SECONDS = 45.0  # two poll ticks (15 s: another run due at once goes first) and jitter
POLL_SECONDS = 15.0  # a read set aside on a doubted clock is made again at the next poll
DISTURBED_AFTER_SECONDS = 900.0  # an error reply or a postponement excuses this long after it
# A budget that affords the schedule (upstream.max_requests_per_minute above its cost) holds
# a read back by at most its window (60 s: the requests of the last minute leave it) and a poll
# tick: such a postponement excuses a settle read that much later, not a quarter of an hour.
BUDGET_HOLD_SECONDS = 60.0 + POLL_SECONDS
OWED_SLACK_SECONDS = 75.0  # a due read seen by the gauge: the last poll before the last scrape
OWED = "cdnvideo_traffic_windows_owed"
# Outcomes of cdnvideo_traffic_windows_total that count or name other things than a minute
# left without its final figures (docs/metrics.md); every other one (given_up, or a reason a
# later release names, such as an account released or handed over) names such minutes.
COUNTED_OUTCOMES = frozenset({"read", "backfilled", "revised", "missed", "mismatched"})
INFO = "cdnvideo_resource_info"
OTHER = "__other__"  # the resource label of what max_resources folds (docs/metrics.md)
LATE = "cdnvideo_traffic_late_requests_total"
LATE_HIT_BYTES = "cdnvideo_traffic_late_hit_bytes_total"
# The account counters whose settle-read increases a lateness family counts (docs/metrics.md),
# by the column of the platform's rows they count, with the name a finding gives them.
LATENESS = {
    COLUMN_KEYS.index("edge_requests_total"): (LATE, "edge requests"),
    COLUMN_KEYS.index("edge_hit_bytes"): (LATE_HIT_BYTES, "edge hit bytes"),
}
RESOURCE_REQUESTS = "cdnvideo_resource_requests_total"
# Quirk revise-after-settle: the columns a revision adds to (the account's first resource:
# one more edge request, a 200), in the platform's row layout.
REVISED_COLUMNS = frozenset({EDGE_REQ, EDGE_200, EDGE_2XX})
RENAME_SEEN_SECONDS = 600.0  # a rename this long before the end must be in the info series
Labels = tuple[tuple[str, str], ...]


def _counted_columns() -> tuple[tuple[str, int, Labels], ...]:
    """Each counted column of the platform's rows (the simulator's ``COLUMN_KEYS``) with the
    family it is counted in, less its scope (``cdnvideo_account_`` or ``cdnvideo_resource_``),
    and its labels (docs/metrics.md: a specific status code in ``responses_total{code}``, a
    class key, the platform's count for the class, in ``responses_by_class_total{class}``)."""
    out: list[tuple[str, int, Labels]] = []
    for col, key in enumerate(COLUMN_KEYS):
        side, _, rest = key.partition("_")
        if rest == "requests_total":
            out.append(("requests_total", col, (("side", side),)))
        elif rest == "bandwidth":  # bits a second over the window: x 60 / 8 bytes a minute
            out.append(("transferred_bytes_total", col, (("side", side),)))
        elif rest == "hit_bytes":
            out.append(("edge_hit_bytes_total", col, ()))
        elif rest.startswith("status_"):
            code = rest.removeprefix("status_")
            if code.endswith("xx"):
                out.append(("responses_by_class_total", col, (("class", code), ("side", side))))
            else:
                out.append(("responses_total", col, (("code", code), ("side", side))))
    return tuple(out)


COUNTED = _counted_columns()
# The remote-write family of a counted family at account scope (docs/remote-write.md; the
# classes are not written).
REMOTE_WRITE_NAMES = {
    "requests_total": "cdnvideo_minute_account_requests",
    "transferred_bytes_total": "cdnvideo_minute_account_transferred_bytes",
    "responses_total": "cdnvideo_minute_account_responses",
}
# Columns of a rate (bandwidth, bits a second), counted as bytes: a minute's figure times its
# 60 seconds / 8, not floored (docs/metrics.md: ``transferred_bytes_total``). The reply rounds
# the window's average to 3 decimals and a read counts its window's bytes to the nearest byte:
# a minute's count lies at most this far from its figure, per row (resource).
# The counted family of a remote-write family at resource scope (docs/remote-write.md).
RESOURCE_WRITE_FAMILIES = {
    "cdnvideo_minute_resource_requests": "requests_total",
    "cdnvideo_minute_resource_transferred_bytes": "transferred_bytes_total",
}
RATE_COLUMNS = frozenset(col for name, col, _ in COUNTED if name == "transferred_bytes_total")
BYTES_PER_RATE_MINUTE = MINUTE / 8
RATE_ROUNDING_BYTES = 0.5 + 0.0005 * BYTES_PER_RATE_MINUTE
# a column by its family (less the scope) and its labels but account and resource
COLUMN_OF = {(name, labels): col for name, col, labels in COUNTED}
COUNTERS = tuple(
    f"cdnvideo_{scope}_{name}"
    for scope in ("account", "resource")
    for name in dict.fromkeys(name for name, _, _ in COUNTED)
)


@dataclass(frozen=True)
class Violation:
    kind: str
    detail: str
    at: float = 0.0

    def of_twin(self) -> Violation:
        """The violation, found in the second replica of a pair."""
        return Violation(self.kind, f"second replica: {self.detail}", self.at)


def hhmm(ts: float) -> str:
    s = int(ts) % 86400
    return f"{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"


def join_minutes(stages: tuple[int, ...], i: int) -> int:
    """How many minutes apart the first reads of one window at ``stages[i]`` may lie, as
    docs/windowing.md states it (*Each minute at each age*, *Request cost*): at the first age
    a run gathers first reads less than that age apart (windows of at most 10 minutes); at a
    later age ``A`` runs are joined while their first reads lie less than ``max(first age, 2,
    ceil(A / 4))`` minutes apart. The checker's own statement of the rule, never the
    exporter's constant: a wrong constant there must fail here."""
    if i == 0:
        return min(stages[0], LONGEST_WINDOW_MINUTES)
    return min(max(stages[0], 2, -(-stages[i] // 4)), LONGEST_WINDOW_MINUTES)


def tolerance(stages: tuple[int, ...], i: int) -> tuple[float, float]:
    """How early and how late the read at ``stages[i]`` may come around the minute's own age
    (its first read plus the age). Never early (``EARLY_SECONDS``: the clocks' rounding): a
    read at an age before that age reads figures that are not yet that old (issue 48 failure
    5). Late by less than ``join_minutes`` (docs/windowing.md: a window's first reads lie less
    than that apart, and it is read at the age of its newest: with first reads a poll's
    jitter less than a minute apart, it can hold one minute more than that many) and two poll
    ticks; a budget or a limit that holds a read back longer is named by a self-metric
    (``quiet``)."""
    return EARLY_SECONDS, join_minutes(stages, i) * MINUTE + TICK_SLACK_SECONDS


def taken_early(stages: tuple[int, ...], i: int) -> float:
    """How early a read may come and still be taken as the read at ``stages[i]`` by the owed
    bounds (a window's span: up to 10 minutes). A read that early is a fault of its own
    (``early settle read``); the owed gauge is held to the reads as they came, so that one
    fault is not named twice."""
    return (LONGEST_WINDOW_MINUTES - 1) * MINUTE


@dataclass
class Life:
    """One daemon process: when it ran and with which config."""

    start: float
    stop: float
    daemon: Daemon
    killed: bool = False  # stopped without its final save


@dataclass
class Checker:
    s: Scenario
    sim: Simulator
    transport: Transport
    violations: list[Violation] = field(default_factory=list)
    lives: list[Life] = field(default_factory=list)
    last: dict[Key, float] = field(default_factory=dict)  # last exposed value, whole seed
    present: set[Key] = field(default_factory=set)  # series of this process' last scrape
    changed_at: dict[Key, float] = field(default_factory=dict)  # when its value last changed
    reset_at: dict[Key, float] = field(default_factory=dict)  # shown again at 0: counts after
    view_at: float = 0.0  # the last start or reload: where a series shown again at 0 starts
    # Where a series first shown at 0 starts counting: the last time a reload took its
    # family in (by metric name), and the state volume writable again after it was not.
    included_at: dict[str, float] = field(default_factory=dict)
    excluded: str = ""  # the family left out by metrics.exclude, by metric name
    writable_at: float | None = None
    unwritable_from: float | None = None  # the state volume cannot be written since
    state_lost_at: float | None = None  # the last restart that found the state file damaged
    # reads the next start does not remember: made while saves failed, to a stop before
    # the volume was writable again
    forgotten: list[tuple[float, float]] = field(default_factory=list)
    born: dict[Key, tuple[float, float]] = field(default_factory=dict)  # (at, value) appeared
    windows: dict[tuple[str, str], float] = field(default_factory=lambda: defaultdict(float))
    _windows_now: dict[Key, float] = field(default_factory=dict)
    _seen: dict[str, Mapping[Key, float]] = field(default_factory=dict)  # last scrape's
    owed: dict[str, float] = field(default_factory=dict)  # the owed gauge at the last scrape
    # per account, (scrape, owed gauge) of every scrape: what the gauge named when
    owed_seen: dict[str, list[tuple[float, float]]] = field(
        default_factory=lambda: defaultdict(list)
    )
    owed_at: float = 0.0  # when: the end, or the last scrape before a stop the day ended in
    info: Mapping[Key, float] = field(default_factory=dict)  # resource info, last scrape
    audit_differs: dict[str, tuple[float, float]] = field(default_factory=dict)  # first (at, s)
    audit_shown: dict[str, tuple[float, float]] = field(default_factory=dict)  # last (at, s)
    late: Mapping[Key, float] = field(default_factory=dict)  # the lateness counters, last scrape
    progress_at: dict[str, float] = field(default_factory=dict)
    disturbed: dict[str, list[tuple[float, float]]] = field(
        default_factory=lambda: defaultdict(list)
    )
    held: dict[str, list[tuple[float, float]]] = field(default_factory=lambda: defaultdict(list))
    # ``disturbed`` less the postponements of a budget that affords the schedule, and those
    strict: dict[str, list[tuple[float, float]]] = field(default_factory=lambda: defaultdict(list))
    budget_held: dict[str, list[tuple[float, float]]] = field(
        default_factory=lambda: defaultdict(list)
    )
    _postponed: float = 0.0
    _limited: float = 0.0
    _read_index: int = 0
    _prev_scrape: float = 0.0
    _first_read: set[tuple[str, bool, int]] = field(default_factory=set)  # minutes read
    # per account, (first read, half, minute) in the order of the first reads
    _firsts: dict[str, list[tuple[float, bool, int]]] = field(
        default_factory=lambda: defaultdict(list)
    )
    _read_times: dict[tuple[str, bool, int], list[float]] = field(
        default_factory=lambda: defaultdict(list)
    )
    _names0: dict[tuple[str, str], str] = field(default_factory=dict)  # at the first start
    # per (account, half): minutes read again since the last start or reload, and when they
    # were read last before it
    _reread: dict[tuple[str, bool], dict[int, float]] = field(
        default_factory=lambda: defaultdict(dict)
    )
    # per scrape: (account, resource, column, since) -> bound; (minute, time) -> fraction
    _again_cache: dict[tuple[str, bool, float], dict[int, float]] = field(default_factory=dict)
    _growth_cache: dict[tuple[str, str | None, int | None, float], float | None] = field(
        default_factory=dict
    )
    _fractions: dict[tuple[int, float], float] = field(default_factory=dict)
    # each account's and resource's counted series (``_account_keys``, ``_resource_keys``)
    _keys: dict[tuple[object, ...], list[tuple[Key, int, bool]]] = field(default_factory=dict)
    # per (account, half, minute): when a fetch of it was thrown away for a doubted Date

    @property
    def revises(self) -> bool:
        return "revise-after-settle" in self.s.quirks

    # -- what the harness reports -------------------------------------------------------------
    def started(self, now: float, daemon: Daemon) -> None:
        if not self.lives:
            for account in self.s.accounts:
                reader = self.sim.traffic_reader(account)
                for res in reader.traffic.resources if reader is not None else ():
                    self._names0[(account, res.id)] = res.name
        self.lives.append(Life(now, math.inf, daemon))
        self.present = set()
        self._seen = {}
        self._windows_now = {}
        self._postponed = self._limited = 0.0
        self._disturb("*", now, now + DISTURBED_AFTER_SECONDS, held=False)
        self.view_at = now
        self._reread.clear()
        for account in self.s.accounts:
            self.progress_at[account] = now

    def stopped(self, now: float, killed: bool = False) -> None:
        self.lives[-1].stop = now
        self.lives[-1].killed = killed
        if self.unwritable_from is not None:
            self.forgotten.append((max(self.unwritable_from, self.lives[-1].start), now))
        self._disturb("*", now, now, held=False)

    def event(self, now: float, e: Event) -> None:
        """Faults hold reads back; a clock step, an account leaving the list or a volume
        that cannot be written moves reads in time but must not drop what is owed."""
        if e.kind in ("exclude", "unlist", "relist"):
            self.view_at = now
            self._reread.clear()
        if e.kind in ("outage", "outage_end", "error_bodies"):
            self._disturb("*", now, now + DISTURBED_AFTER_SECONDS)
        elif e.kind in ("clock", "drift", "unlist", "relist", "unwritable", "writable"):
            self._disturb("*", now, now + DISTURBED_AFTER_SECONDS, held=False)
        if e.kind == "writable":
            self.writable_at = now
            self.unwritable_from = None
        if e.kind == "unwritable":
            self.unwritable_from = now
        if e.kind == "restart" and e.arg("state") in ("corrupt", "truncated"):
            self.state_lost_at = now
        if e.kind == "exclude":
            family = str(e.arg("family"))
            if self.excluded:
                self.included_at[self.excluded] = now
            self.excluded = f"cdnvideo_{family}_total" if family else ""

    def _disturb(
        self, account: str, start: float, end: float, held: bool = True, budget: bool = False
    ) -> None:
        """Mark [start, end] disturbed for ``account`` ("*": all): the age checks skip it; with
        ``held`` (a fault, a limit or a budget held reads back) so does ``not final``. With
        ``budget`` (a budget that affords the schedule postponed a poll) the settle ages are
        still checked, ``BUDGET_HOLD_SECONDS`` later."""
        if held:
            self._add_span(self.held[account], start, end)
        self._add_span(self.disturbed[account], start, end)
        self._add_span((self.budget_held if budget else self.strict)[account], start, end)

    @staticmethod
    def _add_span(spans: list[tuple[float, float]], start: float, end: float) -> None:
        if spans and spans[-1][1] >= start:
            spans[-1] = (spans[-1][0], max(spans[-1][1], end))
        else:
            spans.append((start, end))

    def affords(self, daemon: Daemon) -> bool:
        """Whether the daemon's budget affords its schedule with room to spare: above the
        schedule's cost (``Daemon.cost``; on a platform answering 1-minute windows only, 2, or 1
        without per-resource, for each first read and each age: docs/windowing.md, *Request
        cost*). A budget at the cost exactly never catches up a backlog (after a restart)."""
        if not daemon.budget:
            return False
        cost = daemon.cost()
        if "one-minute-window" in self.s.quirks or self.s.remote_write:
            # remote write keeps every run to one minute (docs/remote-write.md): so its cost
            cost = (2.0 if daemon.per_resource else 1.0) * (1 + len(daemon.stages()))
        return daemon.budget > cost

    def quiet(
        self, account: str, start: float, end: float, held_only: bool = False, strict: bool = False
    ) -> bool:
        """No error reply, postponement, restart or scenario event touched [start, end]
        (``held_only``: nothing that held reads back: a fault, a limit, a budget; ``strict``:
        a postponement by a budget that affords the schedule does not count)."""
        spans = self.held if held_only else self.strict if strict else self.disturbed
        for key in (account, "*"):
            for a, b in spans.get(key, ()):
                if a <= end and start <= b:
                    return False
        return True

    def add(self, kind: str, detail: str, at: float = 0.0) -> None:
        self.violations.append(Violation(kind, detail, at))

    # -- at every scrape ----------------------------------------------------------------------
    def scrape(self, now: float, families: Mapping[str, Mapping[Key, float]]) -> None:
        """One scrape's samples by family. A family whose values are the very object the
        scrape before passed is unchanged (the harness parses a block once): its counters are
        not walked again, since an unchanged value can break none of their rules (a rise's
        bound only grows with time)."""
        self._new_reads()
        postponed = sum(families.get("cdnvideo_upstream_polls_postponed_total", {}).values())
        limited = sum(families.get("cdnvideo_upstream_rate_limited_total", {}).values())
        if postponed > self._postponed or limited > self._limited:
            life = self._life(now)
            budget = limited <= self._limited and life is not None and self.affords(life.daemon)
            self._disturb("*", self._prev_scrape, now + DISTURBED_AFTER_SECONDS, budget=budget)
        self._postponed, self._limited = postponed, limited
        for name in COUNTERS:
            vals = families.get(name)
            if vals is None or self._seen.get(name) is vals:
                continue
            for key, value in vals.items():
                self._counter(now, key, value)
        self._growth_cache.clear()
        self._again_cache.clear()
        self._fractions.clear()
        self.present = set().union(
            *(families[name].keys() for name in COUNTERS if name in families)
        )
        self._seen = dict(families)
        self._windows(now, families.get("cdnvideo_traffic_windows_total", {}))
        self._stall(now, families)
        self.owed = {dict(k[1]).get("account", ""): v for k, v in families.get(OWED, {}).items()}
        for account, value in self.owed.items():
            self.owed_seen[account].append((now, value))
        self.owed_at = now
        self.info = families.get(INFO, {})
        self.late = {family: families.get(family, {}) for family, _ in LATENESS.values()}
        for key, value in families.get(AUDIT, {}).items():
            labels = dict(key[1])
            if labels.get("result") == "differs":
                self.audit_shown[labels.get("account", "")] = (now, value)
                if value > 0:
                    self.audit_differs.setdefault(labels.get("account", ""), (now, value))
        self._prev_scrape = now

    def _new_reads(self) -> None:
        reads = self.transport.reads
        for r in reads[self._read_index :]:
            if r.end > r.at + 1e-6:
                self.add(
                    "read before close",
                    f"{r.account} asked {hhmm(r.start)}-{hhmm(r.end)} at {hhmm(r.at)}",
                    r.at,
                )
            if not r.answered:
                self._disturb(r.account, r.at - MINUTE, r.at + DISTURBED_AFTER_SECONDS)
                continue
            for m in range(r.start, r.end, MINUTE):
                if not r.audit:
                    self._reread_since_view(r.account, r.resources, m, r.at)
                if (r.account, r.resources, m) not in self._first_read:
                    self._first_read.add((r.account, r.resources, m))
                    self._firsts[r.account].append((r.at, r.resources, m))
        self._read_index = len(reads)

    def _counter(self, now: float, key: Key, value: float) -> None:
        prev = self.last.get(key)
        if prev == value and key in self.present and key not in self.born:
            return  # unchanged, and not new any more
        label = _Label(key)
        if key not in self.present:  # appears (first time, or again after an absence)
            if prev is None and value != 0:
                self.add("series born nonzero", f"{label} first exposed at {value:.0f}", now)
            if prev is None or value < prev:  # new, or back at 0 (a reset to Prometheus)
                self.born[key] = (now, value)
                if prev is not None and value == 0:
                    # counts what was read after the start or reload that made it new (the
                    # exporter drops what it counted before; a read between that and this
                    # scrape is shown as its first rise)
                    self.reset_at[key] = self.view_at
                elif prev is None and value == 0:
                    # first shown after a reload took its family in, or after saves failed:
                    # what it counted before (left out, or held back) was dropped
                    since = [self.included_at.get(key[0]), self.writable_at]
                    if any(t is not None for t in since):
                        self.reset_at[key] = max(t for t in since if t is not None)
                if prev is not None and value != 0:
                    self.add("counter decreased", f"{label} {prev:.0f} -> {value:.0f}", now)
            elif value > prev:  # continues: by no more than what happened since it last rose
                self.born[key] = (self.changed_at.get(key, now), prev)
        elif prev is not None and value < prev:
            self.add("counter decreased", f"{label} {prev:.0f} -> {value:.0f}", now)
        if value != prev:
            self.changed_at[key] = now
        self.last[key] = value
        born = self.born.get(key)
        if born is not None and now - born[0] > JUMP_WINDOW_SECONDS:
            del self.born[key]
        elif born is not None:
            bound = self._growth(key, born[0], now)
            if bound is not None and value - born[1] > bound:
                self.add(
                    "series jump",
                    f"{label} {born[1]:.0f} at {hhmm(born[0])} -> {value:.0f} at {hhmm(now)}, "
                    f"the platform counted at most {bound:.0f} since",
                    now,
                )
                del self.born[key]

    def _growth(self, key: Key, since: float, now: float) -> float | None:
        """What the platform counted for the series' scope and side between ``since`` (less
        the reading delay: the first minute a new series counts closed before it appeared)
        and ``now``: an upper bound of a fair rise."""
        labels = dict(key[1])
        account, resource = labels.get("account", ""), labels.get("resource")
        # A side's requests bound every count of that side (responses are requests): the
        # exact column's bound is no tighter than the reading delay it approximates. So the
        # bound is the same for every series of one scope and side (families, codes, classes).
        side = labels.get("side")
        unit = "transferred_bytes_total" if _rate(key) else "requests_total"
        col = COLUMN_OF.get((unit, (("side", side),))) if side else None
        scope = (account, resource, col, since)
        if scope not in self._growth_cache:
            self._growth_cache[scope] = self._platform_growth(account, resource, col, since, now)
        return self._growth_cache[scope]

    def _platform_growth(
        self, account: str, resource: str | None, col: int | None, since: float, now: float
    ) -> float | None:
        reader = self.sim.traffic_reader(account)
        if reader is None or resource == OTHER or col is None:
            return None
        index = None
        if resource is not None:
            index = reader.traffic.index.get(resource)
            if index is None:
                return None
        t1 = since - self.s.delay_seconds - 2 * MINUTE - TICK_SLACK_SECONDS
        first = int((t1 - MINUTE - self.s.late_seconds) // MINUTE) * MINUTE
        # Minutes first read since (a catch-up after an outage or a restart): counted whole,
        # they happened before the series appeared but were never counted before.
        firsts = self._firsts.get(account, [])
        fresh = {
            m
            for _, half, m in firsts[bisect.bisect_left(firsts, (t1,)) :]
            if half == (resource is not None)
        }
        # Minutes read before the last start or reload and again since: a key counts every
        # read made while it is exported (docs/windowing.md), so a settle read since adds
        # what became visible after the read before, also what the platform added while the
        # family was left out (a restart's downtime) or before the series appeared.
        before = self._reread.get((account, resource is not None), {})
        # Minutes read again since, last read before: such a read adds what became visible
        # after that read, also before the series was last seen (it was away meanwhile).
        again = self._read_again(account, resource is not None, t1, now)
        total = 0.0
        span = range(first, int(now // MINUTE) * MINUTE + MINUTE, MINUTE)
        final_after = MINUTE + max(self.s.late_seconds, 0.0)  # a minute's figures final then
        for m in sorted(fresh.union(span, before, again)):
            if m in fresh:
                f1 = 0.0
            else:
                t = min(t1, before.get(m, t1), again.get(m, t1))
                if t >= m + final_after:
                    continue  # final before: nothing visible since (the fraction only grows)
                f1 = self._fraction(m, t)
            f2 = self._fraction(m, now)
            rows = reader.traffic.rows(m)
            chosen = rows if index is None else [rows[index]]
            for row in chosen:
                total += _amount(col, row[col], f2) - _amount(col, row[col], f1)
                if col in RATE_COLUMNS and f2 > f1:  # a rate's rounding, per figure counted
                    total += RATE_ROUNDING_BYTES
            if col in REVISED_COLUMNS and (index is None or index == 0):
                total += self._revision(m, now)
        return total

    def _read_again(self, account: str, half: bool, t1: float, now: float) -> dict[int, float]:
        """The minutes of ``account``'s ``half`` a read in ``(t1, now]`` read, that a read
        before ``t1`` had read too, each with the last such read."""
        cached = self._again_cache.get((account, half, t1))
        if cached is not None:
            return cached
        reads = self.transport.reads
        out: dict[int, float] = self._again_cache.setdefault((account, half, t1), {})
        for r in reads[bisect.bisect_right(reads, t1, key=lambda r: r.at) :]:
            if r.at > now:
                break
            if r.account != account or r.resources != half or not r.answered or r.audit:
                continue
            for m in range(r.start, r.end, MINUTE):
                if m in out:
                    continue
                times = self._read_times.get((account, half, m), [])
                i = bisect.bisect_left(times, t1)
                if i:
                    out[m] = times[i - 1]
        return out

    def _reread_since_view(self, account: str, half: bool, m: int, at: float) -> None:
        """Record a read of minute ``m``; the first since the last start or reload notes when
        it was read last before that, as the daemon remembers it (a read it forgot: the one
        before that; none: the minute's start, as if never read)."""
        times = self._read_times[(account, half, m)]
        if times and times[-1] < self.view_at <= at:
            kept = [t for t in times if not self._forgotten(t)]
            self._reread[(account, half)].setdefault(m, kept[-1] if kept else float(m))
        times.append(at)

    def _gone_at(self, account: str) -> float:
        """When the account left the account list for the rest of the day (``inf``: it did
        not). Its ledger keeps the runs it owes, read should it come back
        (docs/windowing.md, *Account churn*); its series, gone with it, show nothing."""
        gone = math.inf
        for e in self.s.events:
            if e.arg("account") == account and e.kind in ("unlist", "relist"):
                gone = T0 + e.at if e.kind == "unlist" else math.inf
        return gone

    def _owed_named(self, account: str, due: float, t: float) -> bool:
        """Whether a settle read due at ``due`` (its age) and made late at ``t`` was held back
        by a request budget or the platform's rate limit while it caught a backlog up, and
        named while it waited: a limit in force, and ``cdnvideo_traffic_windows_owed`` above
        0 at the scrapes within a scrape interval before ``due`` (other minutes overdue
        already: a backlog) and at every scrape since. A budget that affords the schedule
        waits while it catches a backlog up (a restart's settle reads after its catch-up);
        without a backlog it reads in time (issue 48 failure 6)."""
        life = self._life(due)
        if life is None or not (life.daemon.budget or self.s.platform_limit):
            return False
        seen = self.owed_seen.get(account, [])
        before = [v for at, v in seen if due - self.s.scrape_seconds <= at <= due]
        since = [v for at, v in seen if due < at <= t]
        return bool(before) and min(before) > 0 and all(v > 0 for v in since)

    def _forgotten(self, t: float) -> bool:
        """Whether a read at ``t`` was made while saves failed, up to a stop before they
        worked again: the next start does not remember it (it reads the minute again)."""
        return any(a <= t <= b for a, b in self.forgotten)

    def _fraction(self, m: int, t: float) -> float:
        f = self._fractions.get((m, t))
        if f is None:
            f = self._fractions[(m, t)] = late_fraction(
                m, t, self.s.late_seconds, self.s.late_half_seconds
            )
        return f

    def _windows(self, now: float, values: Mapping[Key, float]) -> None:
        for key, value in values.items():
            labels = dict(key[1])
            prev = self._windows_now.get(key, 0.0)
            added = value - prev if value >= prev else value  # a reset: counted afresh
            self.windows[(labels.get("account", ""), labels.get("outcome", ""))] += added
            self._windows_now[key] = value
            if labels.get("outcome") in ("read", "backfilled") and added > 0:
                self.progress_at[labels.get("account", "")] = now

    def _stall(self, now: float, families: Mapping[str, Mapping[Key, float]]) -> None:
        ups = families.get("cdnvideo_up", {})
        lags = families.get("cdnvideo_traffic_lag_seconds", {})
        for account in self.s.accounts:
            up = ups.get(("cdnvideo_up", (("account", account), ("area", "traffic"))))
            if up is None:
                self.progress_at[account] = now  # not served here: nothing to count
                continue
            quiet_for = now - self.progress_at.get(account, now)
            if quiet_for <= STALL_SECONDS:
                continue
            lag = lags.get(("cdnvideo_traffic_lag_seconds", (("account", account),)), 0.0)
            if up != 0 and lag <= LAG_ALERT_SECONDS:
                self.add(
                    "silent stall",
                    f"{account}: nothing counted for {quiet_for / 60:.0f} min at {hhmm(now)}, "
                    f"up 1, lag {lag:.0f} s",
                    now,
                )
                self.progress_at[account] = now  # once per stall

    # -- at the end ---------------------------------------------------------------------------
    def finish(self, end: float) -> list[Violation]:
        self._new_reads()
        reads = _answered(self.transport.reads)
        reads = self._both_halves(reads)
        aside = _set_aside(self.transport.reads)
        written = self._decode_written() if self.s.remote_write else {}
        windows = _counted_windows(self.transport.reads) if written else {}
        for account in self.s.accounts:
            self._exact(account, reads, end)
            self._silent(account, reads)
            self._ages(account, reads, end, aside)
            self._owed(account, reads, end)
            self._kept(account, end)
            self._names(account, end)
            self._audit(account, reads)
            if self.s.remote_write:
                mine = written.get(account, {})
                totals = {k: v for k, v in mine.items() if not _has_resource(k[0])}
                self._written(account, reads, end, totals, windows)
                self._written_resources(account, mine, windows)
                self._written_sums(account, mine, windows)
        return self.violations

    def _audit(self, account: str, reads: dict[tuple[str, bool, int], list[float]]) -> None:
        """The standing audit re-reads settled windows and compares (docs/windowing.md, *The
        standing audit*): with figures the platform never revised (no quirk
        ``revise-after-settle``), every schedule of the day reading past the lateness
        (``_reaches``; with settling off, the first read) and no finding of a minute counted
        short, every minute was counted at its final figures: it finds no difference."""
        found = self.audit_differs.get(account)
        if not all(self._reaches(max(life.daemon.stages(), default=0)) for life in self.lives):
            return  # a schedule that ends before the lateness: the audit rightly finds more
        if any(v.kind in COUNTED_SHORT for v in self.violations):
            return
        if self.revises:
            self._audit_finds_the_revisions(account, reads)
            return
        if found is None:
            return
        at, seconds = found
        self.add(
            "audit false alarm",
            f"{account}: {seconds:.0f} s of traffic audited as differing at {hhmm(at)}",
            at,
        )

    def _audit_finds_the_revisions(
        self, account: str, reads: dict[tuple[str, bool, int], list[float]]
    ) -> None:
        """Under the quirk ``revise-after-settle``, with every minute counted at its final
        figures otherwise, an audit read differs exactly where its window holds a minute the
        platform revised after the last read that counted it (docs/windowing.md, *The standing
        audit*): ``..._audit_seconds_total{result="differs"}`` is the seconds of those windows
        (those read after the last scrape may not show yet). Held where the record is whole:
        no stop by a kill, no state file lost, the account never away from this replica."""
        if (
            any(life.killed for life in self.lives)
            or self.state_lost_at is not None
            or self._gone_at(account) < math.inf
            or any(e.arg("account") == account for e in self.s.events)
        ):
            return
        shown_at, shown = self.audit_shown.get(account, (0.0, 0.0))
        low = high = 0.0
        for r in self.transport.reads:
            if not (r.audit and r.answered and r.account == account and not r.resources):
                continue
            revised = [
                m
                for m in range(r.start, r.end, MINUTE)
                if self._revision(m, r.at)
                and not self._revision(m, reads.get((account, False, m), [r.at])[-1])
            ]
            if revised:
                high += r.end - r.start
                if r.at <= shown_at - 2 * POLL_SECONDS:
                    low += r.end - r.start
        if not low <= shown <= high:
            self.add(
                "audit off",
                f"{account}: {shown:.0f} s of traffic audited as differing, the platform "
                f"revised {low:.0f} s"
                + (f" to {high:.0f} s" if high != low else "")
                + " of the windows audited after their last read",
            )

    def _decode_written(self) -> dict[str, dict[tuple[Key, int], tuple[float, float]]]:
        """Every sample the receiver got (account totals and resources), per account: its
        value and when it was first sent. A minute is written once (docs/remote-write.md):
        the same series and timestamp sent again must carry the same value (a resend). A body
        the receiver refused first is resent with the same bytes: sent when first tried."""
        out: dict[str, dict[tuple[Key, int], tuple[float, float]]] = defaultdict(dict)
        tried: dict[bytes, float] = {}
        keys: dict[tuple[tuple[str, str], ...], tuple[str | None, Key]] = {}
        for at, body in self.transport.refused_writes:
            tried.setdefault(body, at)
        for accepted, body in self.transport.written:
            at = min(accepted, tried.get(body, accepted))
            for series in decode(body):
                named = keys.get(series.labels)
                if named is None:
                    named = keys[series.labels] = _written_key(series.labels)
                account, key = named
                if account is None:
                    continue
                m = series.timestamp_ms // 1000
                seen = out[account].get((key, m))
                if seen is None:
                    out[account][(key, m)] = (series.value, at)
                elif seen[0] != series.value:
                    self.add(
                        "remote write off", f"{_show(key)} @{hhmm(m)} {seen[0]} then {series.value}"
                    )
        return out

    def _written(
        self,
        account: str,
        reads: dict[tuple[str, bool, int], list[float]],
        end: float,
        samples: dict[tuple[Key, int], tuple[float, float]],
        counted: dict[tuple[str, bool, int], list[tuple[float, int, int]]],
    ) -> None:
        """The remote-write samples of the account's totals (docs/remote-write.md): each
        minute at its own timestamp, once, at the figures of its last read before it was
        written (a minute read again after a restart keeps what was written); a run of several
        minutes read in one window (a catch-up) spread over them, so held to the window's sum;
        every minute read at each age of its schedule written, unless named."""
        reader = self.sim.traffic_reader(account)
        assert reader is not None
        written = {k: v for k, (v, _) in samples.items()}
        first_sent: dict[int, float] = {}
        for (_, m), (_, at) in samples.items():
            first_sent[m] = min(at, first_sent.get(m, at))
        minutes = {m for _, m in written}
        windows: dict[tuple[float, int, int], list[int]] = defaultdict(list)
        for m in sorted(minutes):
            before = [w for w in counted.get((account, False, m), []) if w[0] <= first_sent[m]]
            if not before:
                self.add("remote write off", f"{account} minute {hhmm(m)} written, never read")
                continue
            windows[before[-1]].append(m)
        keys = {key for key, _ in written}
        for (at, start, stop), span in sorted(windows.items()):
            for name, col, labels in COUNTED:
                wname = REMOTE_WRITE_NAMES.get(name)
                if wname is None:
                    continue
                key = (wname, tuple(sorted((("account", account), *labels))))
                if key not in keys:
                    continue  # the family left out (metrics.exclude)
                got = sum(written.get((key, m), 0.0) for m in span)
                want = sum(
                    self._visible(
                        m,
                        [row[col] for row in reader.traffic.rows(m)],
                        at,
                        col in RATE_COLUMNS,
                        col in REVISED_COLUMNS,
                    )
                    for m in span
                )
                off = (
                    RATE_ROUNDING_BYTES * len(reader.traffic.resources)
                    if col in RATE_COLUMNS
                    else 0.0
                )
                if abs(got - want) > off + 1e-6 * max(1.0, abs(want)):
                    self.add(
                        "remote write off",
                        f"{_show(key)} {hhmm(start)}-{hhmm(stop)} written {got:.0f}, its last "
                        f"read at {hhmm(at)} shows {want:.0f}",
                    )
        if not written:
            return  # nothing of the account's totals written: every family left out
        # read at every age: both halves, where the per-resource half is read (a half read
        # alone at an age leaves the minute owed the other: docs/windowing.md)
        unwritten = [
            m
            for (acc, half, m), times in reads.items()
            if acc == account
            and not half
            and m not in minutes
            and all(
                t[-1] < end - MINUTE and self._settled_for_sure(t[0], t)
                for t in (times, reads.get((acc, True, m)) or times)
            )
        ]
        named = sum(
            n for (a, o), n in self.windows.items() if a == account and o not in COUNTED_OUTCOMES
        )
        if len(unwritten) > named:
            first = min(unwritten)
            self.add(
                "remote write missing",
                f"{account}: {len(unwritten)} minutes read at every age (first {hhmm(first)}) "
                f"not written, {named:.0f} named",
            )

    def _written_resources(
        self,
        account: str,
        samples: dict[tuple[Key, int], tuple[float, float]],
        counted: dict[tuple[str, bool, int], list[tuple[float, int, int]]],
    ) -> None:
        """The remote-write samples of each resource written under its own id
        (docs/remote-write.md): at the platform's figures for that resource as its
        per-resource half's last read before the write showed them (a window read whole spread
        over its minutes, so held to its sum); under the quirk ``drop-deleted-resources``, to
        the last read whose reply held it (made before its deletion). ``__other__`` (folded
        resources, what the replies no longer list) is the account's remainder."""
        reader = self.sim.traffic_reader(account)
        assert reader is not None
        index = {res.id: i for i, res in enumerate(reader.traffic.resources)}
        dropped = "drop-deleted-resources" in self.s.quirks  # (``_held_by_replies``)
        spans: dict[tuple[Key, tuple[float, int, int]], list[int]] = defaultdict(list)
        for (key, m), (_, at) in samples.items():
            rid = dict(key[1]).get("resource")
            if rid is None or rid not in index:
                continue  # an account series, or __other__
            gone = reader.traffic.spans[index[rid]][1] if dropped else math.inf
            before = [w for w in counted.get((account, True, m), []) if w[0] <= at and w[0] < gone]
            if not before:
                self.add("remote write off", f"{_show(key)} minute {hhmm(m)} written, never read")
                continue
            spans[(key, before[-1])].append(m)
        for (key, (at, start, stop)), span in sorted(spans.items()):
            family = RESOURCE_WRITE_FAMILIES.get(key[0])
            labels = tuple((k, v) for k, v in key[1] if k not in ("account", "resource"))
            col = COLUMN_OF.get((family or "", labels))
            if col is None:
                continue
            i = index[dict(key[1])["resource"]]
            rate = col in RATE_COLUMNS
            got = sum(samples[(key, m)][0] for m in span)
            first = i == 0 and col in REVISED_COLUMNS
            want = sum(
                self._visible(m, [reader.traffic.rows(m)[i][col]], at, rate, first) for m in span
            )
            off = RATE_ROUNDING_BYTES if rate else 0.0
            if abs(got - want) > off + 1e-6 * max(1.0, abs(want)):
                self.add(
                    "remote write off",
                    f"{_show(key)} {hhmm(start)}-{hhmm(stop)} written {got:.0f}, its last "
                    f"read at {hhmm(at)} shows {want:.0f}",
                )

    def _written_sums(
        self,
        account: str,
        samples: dict[tuple[Key, int], tuple[float, float]],
        counted: dict[tuple[str, bool, int], list[tuple[float, int, int]]],
    ) -> None:
        """A minute's resource samples, ``__other__`` included (the resources
        ``max_resources`` folds, and what the account totals hold beyond the resources the
        replies list), sum to its account sample, family by family (docs/remote-write.md),
        where every resource is kept (no ``resources_include``/``resources_exclude``, per
        resource series on) and the two halves were last read together before the write: a
        rate within its rounding per resource."""
        if not self._every_life(
            lambda d: d.per_resource and d.resources_include == ".*" and not d.resources_exclude
        ):
            return
        parts: dict[tuple[Key, int], list[float]] = defaultdict(list)
        for (key, m), (value, _) in samples.items():
            family = RESOURCE_WRITE_FAMILIES.get(key[0])
            if family is not None:
                rest = tuple((k, v) for k, v in key[1] if k != "resource")
                whole = (REMOTE_WRITE_NAMES[family], rest)
                parts[(whole, m)].append(value)
        for (whole, m), values in sorted(parts.items()):
            got = samples.get((whole, m))
            if got is None:
                continue  # the account family left out (metrics.exclude)
            at = got[1]
            last = [
                max((w[0] for w in counted.get((account, half, m), []) if w[0] <= at), default=0.0)
                for half in (False, True)
            ]
            if last[0] != last[1]:
                continue  # the halves last read apart: the later one may hold more late data
            rate = whole[0] == REMOTE_WRITE_NAMES["transferred_bytes_total"]
            off = RATE_ROUNDING_BYTES * (len(values) + 1) if rate else 0.0
            if abs(sum(values) - got[0]) > off + 1e-6 * max(1.0, abs(got[0])):
                self.add(
                    "remote write off",
                    f"{_show(whole)} minute {hhmm(m)} written {got[0]:.0f}, its resources "
                    f"(__other__ included) {sum(values):.0f}",
                )

    def _both_halves(
        self, reads: dict[tuple[str, bool, int], list[float]]
    ) -> dict[tuple[str, bool, int], list[float]]:
        """``_first_read`` for the minutes first read by a daemon with per-resource series
        (``per_resource``: a first read takes both halves or neither); a daemon without reads
        the totals only. A half answered alone before the minute's halves were first answered
        together, by a daemon with per-resource series, is no read of the minute: nothing is
        counted from half of a first read (docs/windowing.md, *Halves owed separately*), the
        minute is read whole again, and its ages count from that read (seed 1038)."""
        both = _first_read(reads)
        out = {}
        for key, times in reads.items():
            life = self._life(times[0])
            if key in both:
                out[key] = self._from_first_read(times, both[(key[0], not key[1], key[2])])
            elif life is not None and not life.daemon.per_resource:
                out[key] = times
        return out

    def _from_first_read(self, times: list[float], other: list[float]) -> list[float]:
        """``times`` (one half's reads of a minute) from the first read that the other half's
        reads ``other`` answered beside (within a second: one fetch), the reads before it each
        made by a daemon with per-resource series (halves answered alone); ``times`` whole
        when the halves were never answered together (a first read in pieces, kept per half)
        or a read before it was the totals of a daemon without per-resource series."""
        for i, t in enumerate(times):
            if any(abs(t - u) <= 1.0 for u in other):
                return times[i:]
            life = self._life(t)
            if life is None or not life.daemon.per_resource:
                return times
        return times

    def _every_life(self, test: Callable[[Daemon], bool]) -> bool:
        return all(test(life.daemon) for life in self.lives)

    def _kept(self, account: str, end: float) -> None:
        """Resource counter series stay for ``series_retention_hours`` (24) after their
        resource was last seen under them (docs/windowing.md): none may go while the
        account's resource series are shown, but those ``_retired`` names."""

        def mine(key: Key) -> bool:
            return key[0] == RESOURCE_REQUESTS and ("account", account) in key[1]

        if not any(mine(k) for k in self.present):
            return  # family left out, or the account not served here at the end
        retired = self._retired(account, end)
        gone = sorted(
            k
            for k in self.last
            if mine(k) and k not in self.present and dict(k[1])["resource"] not in retired
        )
        if gone:
            self.add("series vanished", f"{len(gone)} series, e.g. {_show(gone[0])}")

    def _last_named(self, account: str) -> dict[str, float]:
        """Per resource, the last first read whose per-resource reply named it under its own
        series: every resource of the reply, or with ``max_resources: N`` the top N of the
        window by edge bandwidth, then edge requests, then id (docs/windowing.md, *Resources:
        filters, top N, removal*). Its series stays ``series_retention_hours`` after that."""
        reader = self.sim.traffic_reader(account)
        assert reader is not None
        drop = "drop-deleted-resources" in self.s.quirks
        seen: set[int] = set()
        out: dict[str, float] = {}
        for r in _counted_reads(self.transport.reads):
            if r.account != account or not r.resources:
                continue
            minutes = range(r.start, r.end, MINUTE)
            if all(m in seen for m in minutes):
                continue  # a settle read: it names no resource anew
            seen.update(minutes)
            rows = reader.per_resource(r.start, len(minutes), r.at, drop_deleted=drop)
            ranked = sorted(
                (-round(float(v[EDGE_BW]), 3), -int(v[EDGE_REQ]), res.id) for res, v in rows
            )
            life = self._life(r.at)
            top = life.daemon.max_resources if life is not None else 0
            for _, _, rid in ranked[:top] if top else ranked:
                out[rid] = r.at
            if top and len(ranked) > top:
                out[OTHER] = r.at  # the rest folded into it
        return out

    def _retired(self, account: str, end: float) -> set[str]:
        """The resources (``__other__`` among them) of ``account`` whose counter series may
        be gone at the end: a series leaves ``series_retention_hours`` after its resource was
        last seen under it (docs/windowing.md), so one last named by a reply (``_last_named``)
        longer ago than that may be removed, and, after a state file ignored as a whole (which
        takes the counters with it: *State file*), one no reply named since.
        ``__other__`` is seen where a first read folds a resource into it. A series is also
        seen where a read adds to it (a settle read's late data; ``__other__``: what the
        account totals hold beyond the resources listed): no later than a scrape and a poll
        before the scrape that showed it change. Its
        ``cdnvideo_resource_requests_total{side="edge"}`` series says whether it is gone."""
        retention = min(life.daemon.retention_hours for life in self.lives) * 3600
        lost = self.state_lost_at
        gone = {
            (dict(key[1]).get("resource", ""), key)
            for key in self.last
            if key[0] == RESOURCE_REQUESTS
            and key not in self.present
            and ("account", account) in key[1]
            and ("side", "edge") in key[1]
        }
        if not gone:
            return set()
        named = self._last_named(account)
        out: set[str] = set()
        for rid, key in gone:
            last = named.get(rid)
            changed = self.changed_at.get(key)
            if changed is not None:
                added = changed - self.s.scrape_seconds - POLL_SECONDS
                last = added if last is None else max(last, added)
            if last is None:
                if lost is not None:
                    out.add(rid)  # never named: shown from a state file lost since
                continue
            if last <= end - retention or (lost is not None and last < lost):
                out.add(rid)
        return out

    def _names(self, account: str, end: float) -> None:
        """A renamed resource keeps its counters; its info series names it anew (once) by
        ``RENAME_SEEN_SECONDS`` after the rename, once read since (docs/windowing.md: at the
        first read after it). So at the end it bears the name of its latest rename that old,
        or of a rename after that one (too recent to be required, not too recent to show)."""
        reader = self.sim.traffic_reader(account)
        assert reader is not None
        traffic = reader.traffic
        renames: dict[str, list[Change]] = defaultdict(list)
        for change in self.sim.churn_log:
            if change.account == account and change.kind == "rename":
                renames[change.resource].append(change)
        for rid, changes in renames.items():
            i = traffic.index.get(rid)
            if i is None or traffic.spans[i][1] <= end:
                continue
            old = [c for c in changes if c.at <= end - RENAME_SEEN_SECONDS]
            if not old:
                continue
            since = old[-1]
            read = any(  # a read since that lets the resource through under its new name
                r.answered
                and r.resources
                and r.account == account
                and r.at >= since.at + 120
                and self._allowed(account, rid, r.at)
                for r in self.transport.reads
            )
            named = sorted(
                dict(k[1]).get("resource_name", "")
                for k in self.info
                if ("account", account) in k[1] and ("resource", rid) in k[1]
            )
            allowed = {c.name for c in changes[len(old) - 1 :]}
            if read and named and (len(named) > 1 or named[0] not in allowed):
                self.add(
                    "stale resource name",
                    f"{account} resource {rid} renamed {since.name!r} at {hhmm(since.at)}, "
                    f"cdnvideo_resource_info names {named}",
                    end,
                )

    def _exact(
        self, account: str, reads: dict[tuple[str, bool, int], list[float]], end: float
    ) -> None:
        """Each minute counted once, at the value of its last read (``want``). A minute still
        owed a read at an age (``_settled_for_sure`` false) may show the value of the read
        before its last (a settle read in pieces is applied once they cover its run, one set
        aside stays owed), only while ``cdnvideo_traffic_windows_owed`` names minutes owed:
        the counter then lies between the two sums, and the gauge is above 0."""
        reader = self.sim.traffic_reader(account)
        assert reader is not None
        want: dict[Key, float] = defaultdict(float)
        short: dict[Key, float] = defaultdict(float)  # what the owed minutes' last reads add
        lost: dict[Key, float] = defaultdict(float)  # what replies without the resource hid
        # per account series and minute: the account's last read less its resources' last
        # reads that held them (what ``__other__`` gets at a run's last read, if above 0)
        gap: dict[tuple[Key, int], float] = defaultdict(float)
        owing: set[tuple[Key, int]] = set()
        slack: dict[Key, float] = defaultdict(float)  # a rate's rounding, in bytes (0 for counts)
        # per account counter a lateness family measures (``LATENESS``), by its column: its
        # key and what the first read of each minute showed of it; a first read takes both
        # halves or neither, so it counts the totals answered first, or, when its
        # per-resource half was answered later, totals read again by then
        firsts: dict[int, tuple[Key, list[float]]] = {}
        for (acc, resources, m), times in reads.items():
            if acc != account:
                continue
            rows = reader.traffic.rows(m)
            # key, values, reads, revised, the first reads' sums it adds to (a lateness pair)
            items: list[tuple[Key, list[float], list[float], bool, list[float] | None]] = []
            held = self._held_by_replies(reader.traffic.spans, times)
            if resources:
                held = [
                    self._let_through(account, res.id, h)
                    for res, h in zip(reader.traffic.resources, held, strict=True)
                ]
            if resources:
                for j, (res, row) in enumerate(zip(reader.traffic.resources, rows, strict=True)):
                    for key, col, revised in self._resource_keys(account, res.id, j):
                        items.append((key, [row[col]], held[j], revised, None))
            else:
                for key, col, revised in self._account_keys(account):
                    track = None
                    if col in LATENESS:
                        if col not in firsts:
                            firsts[col] = (key, [0.0, 0.0])
                        track = firsts[col][1]
                    items.append((key, [row[col] for row in rows], times, revised, track))
            owed = not self._settled_for_sure(times[0], times)
            for key, values, seen, revised, track in items:
                counted = self._counted(key, m, values, times, revised)
                if counted is None:
                    continue
                if track is not None:
                    kept = [t for t in times if not self._forgotten(t)] or times
                    other = [t for t in reads.get((acc, True, m), []) if t >= kept[0]]
                    both = max(kept[0], other[0]) if other else kept[0]
                    rate = _rate(key)
                    track[0] += self._visible(m, values, kept[0], rate, revised)
                    track[1] += self._visible(m, values, both, rate, revised)
                last, prev = counted
                want[key] += last
                if _rate(key):
                    slack[key] += RATE_ROUNDING_BYTES * len(values)
                if owed:
                    short[key] += last - prev
                shown = last  # what the replies that held the resource showed of it
                if seen is not times:  # the reads whose reply held the resource
                    held_last = self._counted(key, m, values, seen, revised)
                    shown = held_last[0] if held_last else 0.0
                    lost[key] += last - shown
                whole = _without_resource(key) if resources else key
                gap[(whole, m)] += -shown if resources else last
                if owed:
                    owing.add((whole, m))
        named = self.owed.get(account, 0.0) > 0
        top = not self._every_life(lambda d: d.max_resources == 0)
        for key, expected in sorted(want.items()):
            got = self.last.get(key)
            if got is None or key not in self.present:
                continue  # not exposed at the end (excluded family, account released)
            if top and key[0].startswith("cdnvideo_resource_"):
                continue  # a resource in and out of the top N: held to the sums (``_sums``)
            low = (expected - short[key] if named else expected) - lost[key]
            if (
                not low - _slack(slack, key, expected)
                <= got
                <= expected + _slack(slack, key, expected)
            ):
                self.add(
                    "miscounted",
                    f"{_show(key)} {got:.0f}, the reads made show {expected:.0f} "
                    f"({got - expected:+.0f})"
                    + (f", {short[key]:.0f} of it owed a read" if short[key] and got < low else ""),
                )
        clipped = _clipped(gap, owing)
        self._sums(
            account, want, short if named else {}, slack, clipped, self._retired(account, end)
        )
        if self.included_at or self.excluded or self.writable_at is not None:
            return
        if self.state_lost_at is not None:
            return
        if any(e.kind in ("exclude", "unlist", "relist") for e in self.s.events):
            return
        for col, (key, first) in firsts.items():
            family, what = LATENESS[col]
            owed = short.get(key, 0.0) if named else 0.0
            self._lateness(account, key, family, what, first, owed, slack)

    def _lateness(
        self,
        account: str,
        key: Key,
        family: str,
        what: str,
        firsts: list[float],
        owed: float,
        slack: Mapping[Key, float],
    ) -> None:
        """What the settle reads added to an account counter (``key``: edge requests, edge
        hit bytes) is what its lateness family counts, over its ages (``LATENESS``,
        docs/metrics.md): the counter less the lateness counters is what the first reads of
        its minutes showed (``firsts``: from the totals answered first to those read again
        once the other half was answered), within the counter's own rounding (``_slack``:
        hit bytes are whole bytes, floored per row as requests are). Held where both were
        shown all along (no family left out or taken in, no counter shown again at 0); a
        lateness series at 0 at the end may be new (held at 0 until a scrape saw it), so
        then the difference may only be larger. While ``cdnvideo_traffic_windows_owed``
        names minutes owed, the counter may lack what their last reads add (``owed``, as
        ``miscounted`` allows)."""
        got = self.last.get(key)
        late = [v for k, v in self.late.get(family, {}).items() if ("account", account) in k[1]]
        if got is None or key not in self.present or not late or key in self.reset_at:
            return
        shown = got - sum(late)
        lo, hi = firsts[0] - owed, firsts[1]
        off = _slack(slack, key, got) + 1e-6
        if not (lo - off <= shown <= hi + off or (0.0 in late and shown > lo)):
            self.add(
                "lateness off",
                f"{account}: {what} {got:.0f} less the lateness counters "
                f"{sum(late):.0f} is {shown:.0f}; the first reads of its minutes showed "
                f"{lo:.0f}" + (f" to {hi:.0f}" if hi != lo else ""),
            )

    def _sums(
        self,
        account: str,
        want: Mapping[Key, float],
        short: Mapping[Key, float],
        slack: Mapping[Key, float],
        clipped: Mapping[Key, tuple[float, float]],
        retired: set[str],
    ) -> None:
        """The resource series (``__other__`` included: the resources folded by
        ``max_resources``) sum to the account's, in every counted family, as far as what the
        reads made show for the two halves (``want``, less what a minute owed a read may
        lack, ``short``): ``account - resources`` lies where the reads put it (``clipped``:
        a run's last read puts what its totals hold beyond its resources under ``__other__``,
        the late data of a resource the platform dropped from its replies included). Checked where
        every series of the family was shown all along (no series shown again at 0, no family
        left out or taken in by a reload, no saves held back). A series gone by retention
        (``retired``) counts at its last value: it took what it counted with it, the account
        keeps it (docs/windowing.md)."""
        if self.writable_at is not None or not self._every_life(
            lambda d: d.per_resource and d.resources_include == ".*" and not d.resources_exclude
        ):
            return  # resources filtered out are in no series (not even __other__)
        shown: dict[Key, float] = defaultdict(float)  # by the account's key: the resources'
        kept: dict[Key, float] = defaultdict(float)  # the series gone by retention
        for key, value in self.last.items():
            labels = dict(key[1])
            if key[0].startswith("cdnvideo_resource_") and labels.get("account") == account:
                name = key[0].replace("cdnvideo_resource_", "cdnvideo_account_")
                rest = tuple(sorted((k, v) for k, v in key[1] if k != "resource"))
                if key in self.present:
                    shown[(name, rest)] += value
                elif labels.get("resource") in retired:
                    kept[(name, rest)] += value
        for key in shown:  # a family or code no series of which is shown stays unchecked
            shown[key] += kept.get(key, 0.0)
        reset = {k[0] for k in self.reset_at if ("account", account) in k[1]}
        for key, got in sorted(shown.items()):
            whole = self.last.get(key)
            family = key[0].replace("cdnvideo_account_", "cdnvideo_resource_")
            left = {key[0], family} & (reset | set(self.included_at) | {self.excluded})
            if whole is None or key not in self.present or left:
                continue
            parts = [k for k in want if k[0] == family and _without_resource(k) == key]
            lo, hi = clipped.get(key, (0.0, 0.0))
            lo -= short.get(key, 0.0)
            hi += sum(short.get(k, 0.0) for k in parts)
            off = _slack(slack, key, whole) + sum(_slack(slack, k, want[k]) for k in parts)
            if not lo - off <= whole - got <= hi + off:
                self.add(
                    "resources off the account",
                    f"{_show(key)} {whole:.0f}, its resources (__other__ included) sum to "
                    f"{got:.0f}; the reads made put the difference at {hi:.0f}"
                    + (f" to {lo:.0f}" if lo != hi else ""),
                )

    def _account_keys(self, account: str) -> list[tuple[Key, int, bool]]:
        """The account's counted series: key, column, whether a revision adds to it."""
        keys = self._keys.get((account, None))
        if keys is None:
            keys = self._keys[(account, None)] = [
                (
                    (f"cdnvideo_account_{name}", tuple(sorted((("account", account), *labels)))),
                    col,
                    col in REVISED_COLUMNS,
                )
                for name, col, labels in COUNTED
            ]
        return keys

    def _resource_keys(self, account: str, rid: str, j: int) -> list[tuple[Key, int, bool]]:
        """A resource's counted series, as ``_account_keys``; a revision adds to the first
        resource's (``j`` 0)."""
        keys = self._keys.get((account, rid, j))
        if keys is None:
            keys = self._keys[(account, rid, j)] = [
                (
                    (
                        f"cdnvideo_resource_{name}",
                        tuple(sorted((("account", account), ("resource", rid), *labels))),
                    ),
                    col,
                    j == 0 and col in REVISED_COLUMNS,
                )
                for name, col, labels in COUNTED
            ]
        return keys

    def _counted(
        self, key: Key, m: int, values: list[float], times: list[float], revised: bool = False
    ) -> tuple[float, float] | None:
        """What the reads ``times`` of minute ``m`` count for ``key``: at its last read, and
        at the read before (0 if none); a series shown again at 0 counts the reads after the
        start or reload that made it new, beyond the read before it that the daemon remembers
        (``_forgotten``). None when no read counts."""
        if not times:
            return None
        reset = self.reset_at.get(key)
        rate = _rate(key)
        if reset is None:  # every read counts from 0
            last = self._visible(m, values, times[-1], rate, revised)
            prev = self._visible(m, values, times[-2], rate, revised) if len(times) > 1 else 0.0
            return last, prev
        since = [t for t in times if t >= reset]
        if not since:
            return None
        base = 0.0
        prior = [t for t in times[: len(times) - len(since)] if not self._forgotten(t)]
        if prior:  # the last read before it the daemon remembers
            base = self._visible(m, values, prior[-1], rate, revised)
        last = self._visible(m, values, since[-1], rate, revised) - base
        prev = self._visible(m, values, since[-2], rate, revised) - base if len(since) > 1 else 0.0
        return last, prev

    def _let_through(self, account: str, rid: str, times: list[float]) -> list[float]:
        """Of ``times``, the reads whose reply named the resource so that the daemon's
        ``resources_include``/``resources_exclude`` let it through (``re.search`` on its id
        or its name at the read: a rename can take a resource out, or in); ``times`` itself
        when all did."""
        if self._every_life(
            lambda d: d.resources_include in ("", ".*") and not d.resources_exclude
        ):
            return times
        kept = [t for t in times if self._allowed(account, rid, t)]
        return times if len(kept) == len(times) else kept

    def _allowed(self, account: str, rid: str, t: float) -> bool:
        life = self._life(t) or self.lives[-1]
        d = life.daemon
        name = self._names0.get((account, rid), "")
        for change in self.sim.churn_log:
            if change.at > t:
                break
            if change.account == account and change.resource == rid and change.name:
                name = change.name
        inc = re.compile(d.resources_include or ".*")
        if not (inc.search(rid) or inc.search(name)):
            return False
        exc = re.compile(d.resources_exclude) if d.resources_exclude else None
        return exc is None or not (exc.search(rid) or exc.search(name))

    def _held_by_replies(
        self, spans: list[tuple[float, float]], times: list[float]
    ) -> list[list[float]]:
        """Per resource, the reads whose per-resource reply held it: all of them, or, under
        the quirk ``drop-deleted-resources``, those made before it was deleted (the platform
        leaves a deleted resource out of every later reply, its own minutes included). The
        late data those replies hid is still the account's: its own series may lack it
        (``_exact``), the resources and ``__other__`` together may not (``_sums``)."""
        if "drop-deleted-resources" not in self.s.quirks:
            return [times] * len(spans)
        return [times if times[-1] < end else [t for t in times if t < end] for _, end in spans]

    def _visible(
        self, m: int, values: list[float], t: float, rate: bool = False, revised: bool = False
    ) -> float:
        """The platform's figures of minute ``m`` as visible at ``t``, floored per row (a
        rate: its bytes over the minute, not floored); ``revised``: ``values`` are of a
        column a revision adds to and hold the account's first resource (``_revision``)."""
        f = self._fraction(m, t)
        if rate:
            return sum(v * f for v in values) * BYTES_PER_RATE_MINUTE
        if f >= 1.0:
            seen = sum(int(v) for v in values)
        elif f > 0:
            seen = sum(int(v * f) for v in values)
        else:
            seen = 0
        return float(seen) + (self._revision(m, t) if revised else 0)

    def _revision(self, m: int, t: float) -> int:
        """What the platform revised of minute ``m`` by ``t`` (quirk ``revise-after-settle``:
        one edge request, a 200, of the account's first resource, 30 minutes after a minute
        hh:07 closed, past the lateness)."""
        return revised_minutes(m, 1, t) if self.revises else 0

    def _silent(self, account: str, reads: dict[tuple[str, bool, int], list[float]]) -> None:
        minutes = sorted(m for (a, res, m) in reads if a == account and not res)
        if not minutes:
            return
        read = set(minutes)
        away = self._dropped_spans(account, reads)
        unread = [
            m
            for m in range(minutes[0], minutes[-1], MINUTE)
            if m not in read and not any(lo < m < hi for lo, hi in away)
        ]
        named = self.windows.get((account, "missed"), 0.0)
        if len(unread) > named:
            self.add(
                "silent minutes",
                f"{account}: {len(unread) - named:.0f} minutes (first {hhmm(unread[0])}) never "
                f"read, {named:.0f} named missed",
            )

    def _dropped_spans(
        self, account: str, reads: dict[tuple[str, bool, int], list[float]]
    ) -> list[tuple[int, int]]:
        """The minutes no daemon owes: an account out of the list longer than
        ``series_retention_hours`` has its ledger dropped, and one that comes back after that
        starts afresh at its newest minute (docs/windowing.md, *Account churn*): between the
        last minute read before it left and the first read after it came back."""
        keep = min(life.daemon.retention_hours for life in self.lives) * 3600
        out: list[tuple[int, int]] = []
        left: float | None = None
        for e in self.s.events:
            if e.arg("account") != account or e.kind not in ("unlist", "relist"):
                continue
            at = T0 + e.at
            if e.kind == "unlist":
                left = at
            elif left is not None:
                if at - left > keep:
                    firsts = {m: times[0] for (a, res, m), times in reads.items() if a == account}
                    before = [m for m, t in firsts.items() if t < left]
                    after = [m for m, t in firsts.items() if t >= at]
                    out.append((max(before, default=0), min(after, default=2**62)))
                left = None
        return out

    def _life(self, at: float) -> Life | None:
        for life in self.lives:
            if life.start <= at <= life.stop:
                return life
        return None

    def _ages(
        self,
        account: str,
        reads: dict[tuple[str, bool, int], list[float]],
        end: float,
        aside: Mapping[tuple[str, bool, int], list[float]],
    ) -> None:
        """Each minute read at each age of its schedule, in order: the read after the one at
        the age before, never before the age, late by at most the tolerance; a read of the
        minute set aside on a doubted clock (``_set_aside``) is made again a poll later. A read
        a budget or a rate limit holds back behind a backlog the owed gauge names
        (``_owed_named``) may come later, or not by the end (it is owed then, and in the
        gauge at the end: ``_owed``)."""
        soon: list[str] = []
        late: list[str] = []
        missing: list[str] = []
        unfinal: list[str] = []
        unfinal_minutes: set[int] = set()  # a minute is named once, whichever halves it lacks
        for (acc, resources, m), times in sorted(reads.items()):
            if acc != account:
                continue
            f = times[0]
            life = self._life(f)
            if life is None:
                continue
            stages = life.daemon.stages()
            if not stages:
                continue
            half = "resources" if resources else "totals"
            last_due = f + stages[-1] * MINUTE + tolerance(stages, len(stages) - 1)[1]
            spans = self.budget_held.get(account, []) + self.budget_held.get("*", [])
            hold = BUDGET_HOLD_SECONDS if any(a <= last_due and f <= b for a, b in spans) else 0
            last_due += hold
            if last_due < min(end, life.stop) and self.quiet(
                account, f - MINUTE, last_due, strict=True
            ):
                for i, age in enumerate(stages):
                    due = f + age * MINUTE
                    early, late_by = tolerance(stages, i)
                    late_by += hold
                    limit = due + late_by
                    own = aside.get((acc, resources, m), [])
                    for _ in own:  # each read of its own set aside since: one poll more
                        more = (
                            due + late_by + POLL_SECONDS * sum(times[i] < t <= limit for t in own)
                        )
                        if more == limit:
                            break
                        limit = more
                    what = f"{account} {half} {hhmm(m)} age {age} (first read {hhmm(f)})"
                    if i + 1 >= len(times):  # each age takes the next read after the last's
                        # still waiting at the end behind a backlog the gauge names: a late
                        # read not yet made (the end's gauge is held to it: ``_owed``)
                        if not self._owed_named(account, due, end):
                            missing.append(what)
                        break
                    t = times[i + 1]
                    if t < due - early:
                        soon.append(f"{what} read {(t - f) / 60:.1f} min after")
                    elif t > limit and not self._owed_named(account, due, t):
                        late.append(f"{what} read {(t - f) / 60:.1f} min after")
            # final: the schedule in force when its last read falls due reaches past lateness
            end_life = self._life(f + stages[-1] * MINUTE) or life
            end_stages = end_life.daemon.stages()
            # a schedule switched off (0) later drops nothing: what is owed is read or named;
            # another reads the run at its ages above the one last read (one already past
            # its last: once more at once), final at the first that reaches past lateness
            need = stages[-1]
            if end_stages and end_life is not life:  # its final read: the new one's first
                need = min((a for a in end_stages if self._reaches(a)), default=end_stages[-1])
            due_final = f + need * MINUTE + 2 * sum(tolerance(stages, len(stages) - 1))
            if (
                need
                and self._reaches(need)
                and due_final + DISTURBED_AFTER_SECONDS < end
                and any(x.stop >= due_final for x in self.lives)  # a day ending down: owed
                and due_final < self._gone_at(account)  # kept for its return (no series)
                and self._fraction(m, times[-1]) < 1.0
                and self.quiet(account, f, self._readable(due_final), held_only=True)
            ):
                unfinal_minutes.add(m)
                unfinal.append(
                    f"{account} {half} {hhmm(m)}: last read {(times[-1] - m - MINUTE):.0f} s "
                    f"after its close, schedule {list(stages)}"
                )
        if soon:
            self.add("early settle read", f"{len(soon)} reads, e.g. {soon[0]}")
        if late:
            self.add("late settle read", f"{len(late)} reads, e.g. {late[0]}")
        if missing:
            self.add("settle read missing", f"{len(missing)} reads, e.g. {missing[0]}")
        named = {
            outcome: n
            for (acc, outcome), n in self.windows.items()
            if acc == account and outcome not in COUNTED_OUTCOMES and n
        }
        if len(unfinal_minutes) > sum(named.values()):
            said = ", ".join(f"{n:.0f} {o}" for o, n in sorted(named.items())) or "none named"
            self.add("not final", f"{len(unfinal_minutes)} minutes ({said}), e.g. {unfinal[0]}")

    def _owed(
        self, account: str, reads: dict[tuple[str, bool, int], list[float]], end: float
    ) -> None:
        """The minutes still owed a settle read at the end, as the reads made show them, against
        ``cdnvideo_traffic_windows_owed`` at the last scrape. Which age a minute is at is the
        exporter's to know (one overdue read may stand for several ages, a run merged into an
        older one is read early by up to the tolerance), so the reads give two bounds, with a
        minute settled by its last read at the last age of a schedule it lived under:
        at least the minutes not read within that age's early tolerance whose last age is
        past due by its late tolerance and the gauge's poll (less those given up); at most
        the minutes without a read for each age, the last within that tolerance, whose first
        age is due. The gauge is held to the reads as they stood when it was last scraped: a
        day that ends with the daemon down (a restart) ends with the gauge it showed before
        the stop."""
        gauge = self.owed.get(account)
        if gauge is None or not self.lives:
            return  # not served here at the end (released): no gauge to hold to
        end = min(end, self.owed_at)
        loose: dict[int, bool] = {}  # settled, taking every early read as the last age's
        strict: dict[int, bool] = {}  # settled, counting a read for each age
        firsts: dict[int, float] = {}
        halves = self.lives[-1].daemon.per_resource  # without, a run owes its totals alone
        for (acc, res, m), times in reads.items():
            if acc != account or (res and not halves):
                continue
            f = times[0]
            firsts[m] = min(firsts.get(m, f), f)
            # a minute first read with settling off owes nothing; one owed keeps owing when a
            # later schedule is 0 (switching settle reads off settles nothing owed)
            lived = [x for x in self._schedules(f) if x]
            early_ok = not lived or not self._first_schedule(f)
            for stages in lived:
                last = f + stages[-1] * MINUTE - 2
                early_ok |= times[-1] >= last - taken_early(stages, len(stages) - 1)
            # switched off, a run gets one last read and is forgotten (docs/windowing.md)
            early_ok |= self._last_read_with_settling_off(f, times)
            loose[m] = loose.get(m, True) and early_ok
            strict[m] = strict.get(m, True) and self._settled_for_sure(f, times)
        least = most = 0
        for m, f in firsts.items():
            stages = self._owing(f)
            if not stages:
                continue
            first_due = f + stages[0] * MINUTE - taken_early(stages, 0) - OWED_SLACK_SECONDS
            if not strict[m] and first_due <= end:
                most += 1
            last_due = f + stages[-1] * MINUTE + tolerance(stages, len(stages) - 1)[1]
            if not loose[m] and last_due + OWED_SLACK_SECONDS < end:
                least += 1
        least = max(0, least - int(self.windows.get((account, "given_up"), 0.0)))
        if not least <= gauge <= most:
            self.add(
                "owed misreported",
                f"{account}: cdnvideo_traffic_windows_owed {gauge:.0f} at the end, the reads "
                f"made leave {least} to {most} minutes owed a settle read",
                end,
            )

    def _settled_for_sure(self, f: float, times: list[float]) -> bool:
        """Whether a minute first read at ``f`` and read at ``times`` can owe nothing more: a
        read for each age of its schedule, the last within the early tolerance of the last
        age; one first read before the last start owes a read under the last schedule if that
        schedule differs (a run past a shortened schedule gets one final read) or the stop
        before was a kill (the reads since the last save are forgotten), unless the reads
        since that start cover every age of it. Each settle read moves a run on by one age,
        however overdue (docs/windowing.md, *A settle schedule*): a read at the last age's
        time after a restart may be the read of an earlier age."""
        life = self.lives[-1]
        stages = self._owing(f)
        if not stages:
            return True

        def each_age(reads: list[float], sched: tuple[int, ...]) -> bool:
            last = f + sched[-1] * MINUTE - 2 - taken_early(sched, len(sched) - 1)
            return len(reads) > len(sched) and reads[-1] >= last

        if f >= life.start:
            return each_age(times, stages)
        since = [t for t in times if t >= life.start]
        if len(since) >= len(stages) and since[-1] >= f + stages[-1] * MINUTE - 2 - taken_early(
            stages, len(stages) - 1
        ):
            return True
        before = self.lives[-2] if len(self.lives) > 1 else life
        changed = any(x.daemon.stages() != stages for x in self.lives if x.stop >= f)
        return not changed and not before.killed and each_age(times, stages)

    def _owing(self, first: float) -> tuple[int, ...]:
        """The schedule a minute first read at ``first`` is owed reads by at the end: none if
        it was first read with settling off; else the last daemon's, or, where that one
        settles nothing (``revisit_minutes: 0``), the schedule it was first read under
        (switching settle reads off drops nothing owed: issue 48 failure 1)."""
        stages = self._first_schedule(first)
        return (self.lives[-1].daemon.stages() or stages) if stages else ()

    def _last_read_with_settling_off(self, first: float, times: list[float]) -> bool:
        """Whether a minute first read at ``first`` was read again under a daemon that
        settles nothing (``revisit_minutes: 0``): a run owed then gets one last read and is
        final (docs/windowing.md), whatever a later schedule says; a kill after it may have
        forgotten that read, so it may still be owed, not must."""
        for t in times:
            life = self._life(t)
            if t > first and life is not None and not life.daemon.stages():
                return True
        return False

    def _first_schedule(self, first: float) -> tuple[int, ...]:
        """The schedule a minute first read at ``first`` was first read under: none (settling
        off) means it never owes a settle read, whatever a later schedule says."""
        life = self._life(first)
        return life.daemon.stages() if life is not None else ()

    def _schedules(self, first: float) -> list[tuple[int, ...]]:
        """The schedules a minute first read at ``first`` lived under, to the end."""
        return [life.daemon.stages() for life in self.lives if life.stop >= first]

    def _reaches(self, last: int) -> bool:
        """The schedule's last age reads a minute after its figures are final: the first read
        comes ``delay_seconds`` after the minute closes, the last age that many minutes later,
        and no read at an age comes before it (``tolerance``)."""
        return self.s.delay_seconds + last * MINUTE >= self.s.late_seconds + MINUTE

    def _readable(self, due: float) -> float:
        """The end of the span in which a read due at ``due`` can be made: ``due`` itself, or,
        when no daemon runs then (down for a restart), the next start plus two poll ticks: an
        error reply or a limit in that span holds the read back as it would have at ``due``."""
        if self._life(due) is not None:
            return due
        later = [life.start for life in self.lives if life.start > due]
        return later[0] + TICK_SLACK_SECONDS if later else due


def _scaled(value: float, f: float) -> int:
    return int(value) if f >= 1.0 else (int(value * f) if f > 0 else 0)


def _slack(slack: Mapping[Key, float], key: Key, value: float) -> float:
    """How far a series of ``key`` may lie from the figures that make ``value``: a rate's
    rounding and the float sums' error (0 for a count)."""
    return slack[key] + 1e-9 * abs(value) if key in slack else 0.0


def _rate(key: Key) -> bool:
    """Whether the series counts the bytes of a rate column (``RATE_COLUMNS``)."""
    return key[0].endswith("_transferred_bytes_total")


def _amount(col: int, value: float, f: float) -> float:
    """What a column's figure ``value`` counts at the visible fraction ``f``."""
    return value * f * BYTES_PER_RATE_MINUTE if col in RATE_COLUMNS else _scaled(value, f)


def _doubted(reads: list[Read]) -> set[int]:
    """The indices of the reads the daemon doubted and applied nothing of: both halves of a
    read asked together (one account, window and instant, each half once) when either answer
    bore a ``Date`` off the platform's clock (docs/windowing.md: a read whose replies doubt
    the believed clock is never counted)."""
    out: set[int] = set()
    groups: dict[tuple[str, int, int, float], list[int]] = {}
    for i, r in enumerate(reads):
        key = (r.account, r.start, r.end, r.at)
        group = groups.get(key)
        if group is None or any(reads[j].resources == r.resources for j in group):
            group = groups[key] = []
        group.append(i)
        if any(reads[j].misdated and reads[j].answered for j in group):
            out.update(group)
    return out


def _set_aside(reads: list[Read]) -> dict[tuple[str, bool, int], list[float]]:
    """Per (account, half, minute): when a read covering it was doubted (``_doubted``)."""
    out: dict[tuple[str, bool, int], list[float]] = defaultdict(list)
    for i in sorted(_doubted(reads)):
        r = reads[i]
        for m in range(r.start, r.end, MINUTE):
            out[(r.account, r.resources, m)].append(r.at)
    return out


def _answered(reads: list[Read]) -> dict[tuple[str, bool, int], list[float]]:
    """Per (account, half, minute): the platform times of the answered reads covering it. The
    standing audit's re-reads are left out: it compares what it reads and counts nothing
    (docs/windowing.md, *The standing audit*); so are the doubted ones
    (``_doubted``), applied by no one: the exporter doubts its clock on them and counts
    nothing they read, first read or settle read (docs/windowing.md, *Reads follow the
    platform's confirmed clock*); the minute is read again at a later poll. The same window
    asked again within a second is one read (a window planned again on a moved clock); another
    window covering the minute at the same time is a read of its own (a minute's read at one
    age and, joined into an older run, at the next age in the same poll: docs/windowing.md
    lets the newer minutes of a joined run be read that early)."""
    out: dict[tuple[str, bool, int], list[float]] = defaultdict(list)
    last: dict[tuple[str, bool, int], tuple[float, int, int]] = {}
    for r in _counted_reads(reads):
        for m in range(r.start, r.end, MINUTE):
            key = (r.account, r.resources, m)
            seen = last.get(key)
            if seen is None or r.at - seen[0] > 1.0 or (r.start, r.end) != seen[1:]:
                out[key].append(r.at)
            last[key] = (r.at, r.start, r.end)
    return out


class _Label:
    """A series' name for a detail line, formatted only when a detail is written."""

    def __init__(self, key: Key) -> None:
        self.key = key

    def __format__(self, spec: str) -> str:
        return _show(self.key)

    def __str__(self) -> str:
        return _show(self.key)


def _counted_windows(
    reads: list[Read],
) -> dict[tuple[str, bool, int], list[tuple[float, int, int]]]:
    """Per (account, half, minute): its counted reads (as ``_answered`` takes them), in
    order, each as when it was made and its window."""
    out: dict[tuple[str, bool, int], list[tuple[float, int, int]]] = defaultdict(list)
    for r in _counted_reads(reads):
        for m in range(r.start, r.end, MINUTE):
            out[(r.account, r.resources, m)].append((r.at, r.start, r.end))
    return out


def _counted_reads(reads: list[Read]) -> Iterator[Read]:
    """The reads that count: answered, not the audit's, not doubted (``_answered``)."""
    doubted = _doubted(reads)
    return (r for i, r in enumerate(reads) if r.answered and not r.audit and i not in doubted)


def _first_read(
    reads: dict[tuple[str, bool, int], list[float]],
) -> dict[tuple[str, bool, int], list[float]]:
    """The minutes whose first read was applied: a first read takes both halves (totals, per
    resource) or neither, so a minute with one half answered and never the other was not
    counted (the other half failed, and the minute was then missed: beyond catch-up)."""
    return {k: v for k, v in reads.items() if (k[0], not k[1], k[2]) in reads}


def _clipped(
    gap: Mapping[tuple[Key, int], float], owing: set[tuple[Key, int]]
) -> dict[Key, tuple[float, float]]:
    """Per account series, where ``account - resources`` lies given each minute's ``gap``
    (the account's last read less its resources'): a run's last read moves a positive gap of
    the run's minutes to ``__other__`` (``min(gap, 0)`` per run), and the runs' bounds
    hold whatever minutes they join: from the sum of ``min(gap, 0)`` per minute to
    ``min(sum, 0)``; a minute still owed (``owing``) may not have had its last read (its gap
    unclipped)."""
    settled: dict[Key, float] = defaultdict(float)
    lo: dict[Key, float] = defaultdict(float)
    up: dict[Key, float] = defaultdict(float)
    for (key, m), g in gap.items():
        lo[key] += min(g, 0.0)
        if (key, m) in owing:
            up[key] += g
        else:
            settled[key] += g
    return {k: (lo[k], up[k] + min(settled[k], 0.0)) for k in lo}


def _written_key(labels: tuple[tuple[str, str], ...]) -> tuple[str | None, Key]:
    """A written series' account (None: no account label) and its key (name, other labels
    sorted)."""
    rest = dict(labels)
    account = rest.get("account")
    if account is None:
        return None, ("", ())
    name = rest.pop("__name__")
    return account, (name, tuple(sorted(rest.items())))


@functools.cache
def _without_resource(key: Key) -> Key:
    """A resource series' account series (same family and labels, ``resource`` left out)."""
    name = key[0].replace("cdnvideo_resource_", "cdnvideo_account_")
    return name, tuple((k, v) for k, v in key[1] if k != "resource")


def _has_resource(key: Key) -> bool:
    return any(k == "resource" for k, _ in key[1])


def _show(key: Key) -> str:
    return key[0] + "{" + ",".join(f'{k}="{v}"' for k, v in key[1]) + "}"
