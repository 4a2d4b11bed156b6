"""Pure traffic transform: an account's ledger counters and its latest first-read window -> a
Fragment of the traffic families (``families``), each resource's series laid out as rows
(``blocks``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from itertools import compress

from exporter.exposition import Fragment, MetricSpec, Samples
from exporter.support.platform_fields import SIDES
from exporter.traffic.blocks import (
    BYTES,
    COUNTED,
    END,
    GAUGE,
    PER_SECOND,
    Carry,
    Layout,
    Part,
    Rows,
    Scope,
)
from exporter.traffic.counters import AT_ZERO, SHOWN, Late
from exporter.traffic.families import (
    ACCOUNT,
    ALL_RANGES,
    CLASSES,
    CODES,
    FULL,
    LAST_STAGE_LATE_SHARE,
    LATE_HIT_BYTES,
    LATE_REQUESTS,
    LATE_SHARE,
    LATE_SPECS,
    RESOURCE,
    RESOURCE_INFO,
    SETTLED_LATE_SHARE,
    SPECS,
    Codes,
    Families,
    View,
)
from exporter.traffic.ledger import OTHER, AccountLedger
from exporter.traffic.parse import COUNT_INDEX, GAUGE_INDEX, TRANSFERRED, ResourceRow, Row, Values
from exporter.traffic.windows import Window

INFO = Layout([Part(RESOURCE_INFO, GAUGE, ((),), (0,))])  # one series a resource, always 1

# Key indexes in the parsed arrays, per side.
_REQ = {s: COUNT_INDEX[f"{s}_requests_total"] for s in SIDES}
_HIT_BYTES = COUNT_INDEX["edge_hit_bytes"]
_TRANSFERRED = {s: COUNT_INDEX[key] for s, key in TRANSFERRED.items()}
_BW = {s: GAUGE_INDEX[f"{s}_bandwidth"] for s in SIDES}
_HIT_RATIO = GAUGE_INDEX["edge_hit_ratio"]


@dataclass(frozen=True, slots=True)
class Latest:
    """The latest first-read window: what the gauges describe."""

    window: Window
    totals: Row
    named: tuple[ResourceRow, ...] = ()
    other: Row | None = None  # the folded resources summed, when max_resources cut some


@dataclass(slots=True)
class Hold:
    """Keys held at 0 by one build: ``served`` (in): a scrape was answered with every key
    held so far, so they show their values now; ``held`` (out): a key is still held at 0;
    ``new`` (out): a key was published for the first time at 0 (not yet seen by a scrape)."""

    served: bool
    held: bool = False
    new: bool = False
    # keys this build put at 0 for the first time (the poller drops what they counted if the
    # fragment is held back: ``AccountLedger.drop_unpublished``)
    fresh: list[tuple[bytearray, Values, int]] = field(default_factory=list)
    fresh_late: list[tuple[Late, str]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Layouts:
    """The layouts (``blocks.Layout``) of a view's families: the account's counters and
    gauges, and each resource's."""

    account_counted: Layout
    resource_counted: Layout
    account_gauged: Layout
    resource_gauged: Layout

    @classmethod
    def of(cls, view: View) -> Layouts:
        wants = view.selection.wants
        return cls(
            Layout(_counted(ACCOUNT, CODES, wants)),
            Layout(_counted(RESOURCE, view.resource_codes, wants)),
            Layout(_gauged(ACCOUNT, CODES, ALL_RANGES, wants)),
            Layout(_gauged(RESOURCE, view.resource_codes, view.resource_ranges, wants)),
        )


Keyed = list[tuple[tuple[str, ...], int]]  # each series' label values after the scope's, key


def _parts(wants: Callable[[str], bool], *families: tuple[MetricSpec, int, Keyed]) -> list[Part]:
    return [
        Part(spec, source, tuple(t for t, _ in keyed), tuple(k for _, k in keyed))
        for spec, source, keyed in families
        if wants(spec.name)
    ]


def _by_side(keys: Codes) -> Keyed:
    return [((side, code), i) for side in SIDES for code, i in keys[side]]


def _counted(f: Families, codes: Codes, wants: Callable[[str], bool]) -> list[Part]:
    """The counter families, in the order of the series of each."""
    return _parts(
        wants,
        (f.requests_total, COUNTED, [((side,), _REQ[side]) for side in SIDES]),
        (f.responses_total, COUNTED, _by_side(codes)),
        (f.responses_by_class_total, COUNTED, _by_side(CLASSES)),
        (f.transferred_bytes_total, COUNTED, [((side,), _TRANSFERRED[side]) for side in SIDES]),
        (f.edge_hit_bytes_total, COUNTED, [((), _HIT_BYTES)]),
    )


def _gauged(f: Families, codes: Codes, ranges: Codes, wants: Callable[[str], bool]) -> list[Part]:
    """The gauge families, from the latest window's row."""
    return _parts(
        wants,
        (f.bandwidth, BYTES, [((side,), _BW[side]) for side in SIDES]),
        (f.requests_per_second, PER_SECOND, [((side,), _REQ[side]) for side in SIDES]),
        (f.responses_per_second, PER_SECOND, _by_side(codes)),
        (f.responses_by_class_per_second, PER_SECOND, _by_side(CLASSES)),
        (f.response_time_median, GAUGE, _by_side(ranges)),
        (f.edge_hit_ratio, GAUGE, [((), _HIT_RATIO)]),
        (f.edge_hit_bytes_per_second, PER_SECOND, [((), _HIT_BYTES)]),
        (f.window_end, END, [((), 0)]),
    )


def _counters(scope: Scope, head: tuple[str, ...], v: Values, shown: bytearray, hold: Hold) -> None:
    """Counter samples of one series; a key not published before is published at 0 (marked
    AT_ZERO) and stays at 0 until a scrape was answered with it (``hold.served``), so its
    first count is an increase to Prometheus however far apart its scrapes are. A new key whose
    count is 0 is held as well: the 0 is shown, but what the next minutes count would reach a
    scrape that never saw the 0. A key the row lacks (NaN) is left out."""
    pick = scope.layout.counts
    values = pick(v)
    total = sum(values)
    if total == total:  # no NaN
        if pick(shown).count(SHOWN) == len(values):  # every key shown
            scope.add(head, values)
            return
    else:
        present = tuple(map(float.__eq__, values, values))
        states = compress(pick(shown), present)
        if sum(map(SHOWN.__eq__, states)) == sum(present):
            scope.add(head, values, present)
            return

    def value(i: int) -> float | None:
        if v[i] != v[i]:
            return None
        state = shown[i]
        if state == SHOWN or (state == AT_ZERO and hold.served):
            shown[i] = SHOWN
            return v[i]
        if state != AT_ZERO:
            shown[i] = AT_ZERO
            hold.new = True
            hold.fresh.append((shown, v, i))
        hold.held = True
        return 0.0

    scope.add_each(head, value)


def _gauges(scope: Scope, head: tuple[str, ...], row: Row, seconds: float, end: float) -> None:
    """Gauge samples of one row of the latest window; a key the row lacks is left out."""
    layout = scope.layout
    values = layout.rates(layout.counts(row.counts), layout.gauges(row.gauges), seconds, end)
    total = sum(values)
    present = None if total == total else tuple(map(float.__eq__, values, values))
    scope.add(head, values, present)


def build_fragment(
    account: str,
    ledger: AccountLedger,
    latest: Latest | None,
    view: View = FULL,
    previous: Fragment | None = None,
    served: bool = True,
) -> Fragment:
    """Counters from the ledger (every series it holds, with an info series each), gauges
    from the latest window.

    A counter key seen for the first time is published at 0 and keeps 0 until a build
    after a scrape was answered with every key held so far (``served``); ``ledger.unshown``
    says keys are held, ``ledger.zero_seq`` is set to -1 when this build holds a new one
    (the poller sets it to the store's sequence once published). ``previous``: the fragment
    this one replaces; a resource it had whole takes its label tuples from it (found where
    it says, ``blocks.Carry``), so a build of the same resources makes no label tuple and
    adds each family's values at once
    (docs/performance.md#a-traffic-publishs-per-series-work-done-by-maps).
    """
    build = _Build(
        account,
        view,
        previous.samples if previous is not None else {},
        Carry.of(previous.carry if previous is not None else None, (account, view)),
        Layouts.of(view),
        Hold(served),
    )
    build.counters(ledger)
    build.late(ledger)
    hold = build.hold
    ledger.unshown = hold.held
    if hold.new:
        ledger.zero_seq = -1
        ledger.unpublished += hold.fresh
        ledger.unpublished_late += hold.fresh_late
    build.gauges(latest)
    made = build.made
    carry = Carry((account, view), build.scopes)
    return Fragment({spec: made[spec] for spec in SPECS if spec in made}, carry=carry)


@dataclass(slots=True)
class _Build:
    """One ``build_fragment``: what it reads (the fragment before's samples and rows,
    ``before`` and ``carried``), the families it makes so far (``made``) and where each scope
    put its resources' series (``scopes``); its steps in order: ``counters``, ``late``,
    ``gauges``."""

    account: str
    view: View
    before: Mapping[MetricSpec, Samples]
    carried: Mapping[str, Rows]
    layouts: Layouts
    hold: Hold
    made: dict[MetricSpec, Samples] = field(default_factory=dict)
    scopes: dict[str, Rows] = field(default_factory=dict)

    def counters(self, ledger: AccountLedger) -> None:
        """The account's and each series' counters, with an info series each."""
        account, hold, carried = self.account, self.hold, self.carried
        acc = Scope(self.layouts.account_counted)
        res = Scope(self.layouts.resource_counted, carried.get("counted"))
        wants = self.view.selection.wants
        info = Scope(INFO, carried.get("info")) if wants(RESOURCE_INFO.name) else None
        _counters(acc, (account,), ledger.totals, ledger.totals_shown, hold)
        for key in sorted(ledger.series):
            s = ledger.series[key]
            _counters(res, (account, key), s.values, s.shown, hold)
            if info is not None:
                info.add((account, key, s.name, s.cname), (1.0,))
        self.made |= acc.samples(self.before)[0]
        self.made |= self._taken(res, "counted")
        if info is not None:
            self.made |= self._taken(info, "info")

    def late(self, ledger: AccountLedger) -> None:
        """The settle-read families that are exported (``_late``)."""
        for spec in LATE_SPECS:
            if self.view.selection.wants(spec.name):
                self.made[spec] = Samples(like=self.before.get(spec), group=1)
        _late(self.made, self.account, ledger, self.hold)

    def gauges(self, latest: Latest | None) -> None:
        """The gauges of the latest window, the account's and each resource's (none
        without a window)."""
        account = self.account
        acc = Scope(self.layouts.account_gauged)
        res = Scope(self.layouts.resource_gauged, self.carried.get("gauged"))
        if latest is not None:
            w = latest.window
            seconds, end = float(w.end - w.start), float(w.end)
            _gauges(acc, (account,), latest.totals, seconds, end)
            for r in latest.named:
                _gauges(res, (account, r.id, r.name, r.cname), r.row, seconds, end)
            if latest.other is not None:
                _gauges(res, (account, OTHER, OTHER, ""), latest.other, seconds, end)
        self.made |= acc.samples(self.before)[0]
        self.made |= self._taken(res, "gauged")

    def _taken(self, scope: Scope, name: str) -> dict[MetricSpec, Samples]:
        """The scope's families; where it put each row's series kept under ``name``."""
        made, self.scopes[name] = scope.samples(self.before)
        return made


def _late(out: dict[MetricSpec, Samples], account: str, ledger: AccountLedger, hold: Hold) -> None:
    """The settle-read families (account level), those that are exported; a new series held
    at 0 as a counter key is (``_counters``)."""
    requests, hit_bytes, share = (
        out.get(LATE_REQUESTS),
        out.get(LATE_HIT_BYTES),
        out.get(LATE_SHARE),
    )
    for age, late in sorted(ledger.late.items()):
        labels = (account, str(age))
        for part, samples, value in (
            ("requests", requests, late.requests),
            ("hit_bytes", hit_bytes, late.hit_bytes),
        ):
            if samples is None:
                continue
            if part in late.held and hold.served:
                late.held.discard(part)
            if part not in late.shown:  # a new series: at 0 until a scrape was answered
                late.shown.add(part)
                late.held.add(part)
                hold.new = True
                hold.fresh_late.append((late, part))
            if part in late.held:
                samples.append((labels, 0.0))
                hold.held = True
            else:
                samples.append((labels, value))
        if share is not None and late.share is not None:
            share.append((labels, late.share))
    settled, last = out.get(SETTLED_LATE_SHARE), out.get(LAST_STAGE_LATE_SHARE)
    if settled is not None and ledger.late_share is not None:
        settled.append(((account,), ledger.late_share))
    if last is not None and ledger.last_stage_share is not None:
        last.append(((account,), ledger.last_stage_share))
