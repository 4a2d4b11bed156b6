"""Traffic metric families, and the pure step from ledger counters + latest window to a Fragment.

Exposition example::

    cdnvideo_account_requests_total{account="acme",side="edge"} 18342211
    cdnvideo_account_bandwidth_bytes_per_second{account="acme",side="edge"} 52428800
    cdnvideo_resource_responses_per_second{account="acme",resource="101",resource_name="www",\
cname="www.acme.example",side="edge",code="404"} 1.35
    cdnvideo_account_responses_by_class_total{account="acme",side="edge",class="5xx"} 1731
    cdnvideo_resource_edge_hit_bytes_total{account="acme",resource="__other__"} 910532771840
    cdnvideo_account_transferred_bytes_total{account="acme",side="edge"} 48318382080
    cdnvideo_resource_info{account="acme",resource="101",resource_name="www",\
cname="www.acme.example"} 1

Resource counters carry ``account, resource`` only (a renamed resource keeps its counter);
name and cname are on ``cdnvideo_resource_info``, which queries join with ``group_left``.
Resource gauges keep ``resource_name`` and ``cname`` (they describe the latest window).

The platform counts each response twice, under its code (``edge_status_404``) and its class
(``edge_status_4xx``): the ``code`` families carry the specific codes only and the ``class``
families the class keys only, so a sum over either label is the response rate.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from itertools import compress

from exporter.exposition import EVERYTHING, FamilySelection, Fragment, MetricSpec, Samples
from exporter.support.platform_fields import SIDES, SIZE_RANGES, STATUS_CODES
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
from exporter.traffic.ledger import AT_ZERO, OTHER, SHOWN, AccountLedger, Late
from exporter.traffic.parse import (
    COUNT_INDEX,
    GAUGE_INDEX,
    TRANSFERRED,
    ResourceRow,
    Row,
    Values,
)
from exporter.traffic.windows import Window

ACCOUNT_LABELS = ("account",)
RESOURCE_LABELS = ("account", "resource", "resource_name", "cname")
COUNTER_LABELS = ("account", "resource")  # resource counters: identity only


@dataclass(frozen=True)
class Families:
    """The traffic families of one scope (``account`` or ``resource``)."""

    bandwidth: MetricSpec
    requests_total: MetricSpec
    requests_per_second: MetricSpec
    responses_total: MetricSpec
    responses_per_second: MetricSpec
    responses_by_class_total: MetricSpec
    responses_by_class_per_second: MetricSpec
    response_time_median: MetricSpec
    edge_hit_ratio: MetricSpec
    edge_hit_bytes_total: MetricSpec
    edge_hit_bytes_per_second: MetricSpec
    window_end: MetricSpec
    transferred_bytes_total: MetricSpec

    def all(self) -> tuple[MetricSpec, ...]:
        return tuple(getattr(self, name) for name in self.__dataclass_fields__)


def _families(scope: str, base: tuple[str, ...], counted: tuple[str, ...]) -> Families:
    """``base`` labels the gauges, ``counted`` the counters."""
    p = f"cdnvideo_{scope}_"
    of = "the account" if scope == "account" else "the resource"
    win = " in the latest complete window"
    return Families(
        *_flow_families(p, of, win, base, counted), *_cache_families(p, of, win, base, counted)
    )


Specs = tuple[MetricSpec, ...]


def _flow_families(
    p: str, of: str, win: str, base: tuple[str, ...], counted: tuple[str, ...]
) -> Specs:
    """The bandwidth, request, response and response-time families (``_families``)."""
    return (
        MetricSpec(
            p + "bandwidth_bytes_per_second", "gauge",
            f"Bandwidth of {of}{win}, bytes per second (the platform's bits/s divided by 8).",
            (*base, "side"), "bytes/s", "edge_bandwidth, origin_bandwidth",
        ),
        MetricSpec(
            p + "requests_total", "counter",
            f"Requests to {of}; each minute counted once, late increases added on re-read.",
            (*counted, "side"), "requests", "edge_requests_total, origin_requests_total",
        ),
        MetricSpec(
            p + "requests_per_second", "gauge", f"Request rate of {of}{win}.",
            (*base, "side"), "requests/s", "edge_requests_total, origin_requests_total",
        ),
        MetricSpec(
            p + "responses_total", "counter",
            f"Responses of {of} by specific status code (never a class); each minute counted once, "
            "late increases added on re-read.",
            (*counted, "side", "code"), "responses", "edge_status_<code>, origin_status_<code>",
        ),
        MetricSpec(
            p + "responses_per_second", "gauge",
            f"Response rate of {of} by specific status code (never a class){win}.",
            (*base, "side", "code"), "responses/s", "edge_status_<code>, origin_status_<code>",
        ),
        MetricSpec(
            p + "responses_by_class_total", "counter",
            f"Responses of {of} by status class (2xx ... 5xx); each minute counted once, late "
            "increases added on re-read.",
            (*counted, "side", "class"), "responses", "edge_status_<N>xx, origin_status_<N>xx",
        ),
        MetricSpec(
            p + "responses_by_class_per_second", "gauge",
            f"Response rate of {of} by status class (2xx ... 5xx){win}.",
            (*base, "side", "class"), "responses/s", "edge_status_<N>xx, origin_status_<N>xx",
        ),
        MetricSpec(
            p + "response_time_median_seconds", "gauge",
            f"Median load time of successful (2xx) responses of {of} by size range{win}.",
            (*base, "side", "size_range"), "seconds", "edge_request_time, origin_request_time",
        ),
    )  # fmt: skip


def _cache_families(
    p: str, of: str, win: str, base: tuple[str, ...], counted: tuple[str, ...]
) -> Specs:
    """The edge-cache, window-end and transferred-bytes families (``_families``)."""
    return (
        MetricSpec(
            p + "edge_hit_ratio", "gauge",
            f"Cached traffic divided by total edge traffic of {of}{win}.",
            base, "ratio", "edge_hit_ratio",
        ),
        MetricSpec(
            p + "edge_hit_bytes_total", "counter",
            f"Bytes of {of} served from edge cache hits; each minute counted once, late increases "
            "added on re-read.",
            counted, "bytes", "edge_hit_bytes",
        ),
        MetricSpec(
            p + "edge_hit_bytes_per_second", "gauge",
            f"Bytes per second of {of} served from edge cache hits{win}.",
            base, "bytes/s", "edge_hit_bytes",
        ),
        MetricSpec(
            p + "window_end_timestamp_seconds", "gauge",
            "Unix time of the end of the window the traffic gauges describe.",
            base, "seconds", "end of the latest first-read window",
        ),
        MetricSpec(
            p + "transferred_bytes_total", "counter",
            f"Bytes delivered by {of}: each minute's bandwidth x its seconds / 8, counted once, "
            "late increases added on re-read.",
            (*counted, "side"), "bytes", "edge_bandwidth, origin_bandwidth x window seconds / 8",
        ),
    )  # fmt: skip


ACCOUNT = _families("account", ACCOUNT_LABELS, ACCOUNT_LABELS)
RESOURCE = _families("resource", RESOURCE_LABELS, COUNTER_LABELS)
RESOURCE_INFO = MetricSpec(
    "cdnvideo_resource_info", "gauge",
    "Always 1: the name and cname of each resource with counters (and __other__); join with "
    "group_left to label the resource counters.",
    RESOURCE_LABELS, "", "resource, resource_name, cname of the per-resource reply",
)  # fmt: skip
INFO = Layout([Part(RESOURCE_INFO, GAUGE, ((),), (0,))])  # one series a resource, always 1
LATE_LABELS = ("account", "after_minutes")
LATE_REQUESTS = MetricSpec(
    "cdnvideo_traffic_late_requests_total",
    "counter",
    "Edge requests added by the settle reads at after_minutes after the first read "
    "(traffic.revisit_minutes): the platform's late data.",
    LATE_LABELS,
    "requests",
    "settle reads, account totals",
)
LATE_HIT_BYTES = MetricSpec(
    "cdnvideo_traffic_late_hit_bytes_total",
    "counter",
    "Edge hit bytes added by the settle reads at after_minutes after the first read.",
    LATE_LABELS,
    "bytes",
    "settle reads, account totals",
)
LATE_SHARE = MetricSpec(
    "cdnvideo_traffic_late_share",
    "gauge",
    "Share of the latest settled run's edge requests that the settle read at after_minutes "
    "added (0.008 = +0.8%).",
    LATE_LABELS,
    "ratio",
    "settle reads, account totals",
)
SETTLED_LATE_SHARE = MetricSpec(
    "cdnvideo_traffic_settled_late_share",
    "gauge",
    "Share of the latest fully settled run's edge requests that arrived after its first read.",
    ACCOUNT_LABELS,
    "ratio",
    "settle reads, account totals",
)
LAST_STAGE_LATE_SHARE = MetricSpec(
    "cdnvideo_traffic_last_stage_late_share",
    "gauge",
    "Share of the latest fully settled run's edge requests that its last settle read added; "
    "above 0 the schedule stops while figures still rise.",
    ACCOUNT_LABELS,
    "ratio",
    "settle reads, account totals",
)
LATE_SPECS = (LATE_REQUESTS, LATE_HIT_BYTES, LATE_SHARE, SETTLED_LATE_SHARE, LAST_STAGE_LATE_SHARE)
SPECS: tuple[MetricSpec, ...] = (*ACCOUNT.all(), *RESOURCE.all(), RESOURCE_INFO, *LATE_SPECS)

# Key indexes in the parsed arrays, per side.
_REQ = {s: COUNT_INDEX[f"{s}_requests_total"] for s in SIDES}
_STATUS = {s: tuple(COUNT_INDEX[f"{s}_status_{c}"] for c in STATUS_CODES) for s in SIDES}
_HIT_BYTES = COUNT_INDEX["edge_hit_bytes"]
_TRANSFERRED = {s: COUNT_INDEX[key] for s, key in TRANSFERRED.items()}
_BW = {s: GAUGE_INDEX[f"{s}_bandwidth"] for s in SIDES}
_RT = {s: tuple(GAUGE_INDEX[f"{s}_request_time_{r}"] for r in SIZE_RANGES) for s in SIDES}
_HIT_RATIO = GAUGE_INDEX["edge_hit_ratio"]

Codes = dict[str, tuple[tuple[str, int], ...]]  # side -> (label value, index) pairs
_KEYS: Codes = {s: tuple(zip(STATUS_CODES, _STATUS[s], strict=True)) for s in SIDES}
CODES: Codes = {s: tuple((c, i) for c, i in _KEYS[s] if not c.endswith("xx")) for s in SIDES}
CLASSES: Codes = {s: tuple((c, i) for c, i in _KEYS[s] if c.endswith("xx")) for s in SIDES}
NO_CODES: Codes = {s: () for s in SIDES}
ALL_RANGES: Codes = {s: tuple(zip(SIZE_RANGES, _RT[s], strict=True)) for s in SIDES}
NO_RANGES: Codes = {s: () for s in SIDES}


@dataclass(frozen=True, slots=True)
class View:
    """What a traffic fragment holds: the families exported (``metrics.include``/``exclude``)
    and the per-resource granularity (``traffic.resource_status_codes``: ``classes`` leaves the
    resources' specific codes out, their class families stay; ``traffic.resource_request_times``).
    Account families always carry every code, class and range.
    Families left out are never built: no sample of them is made."""

    selection: FamilySelection = EVERYTHING
    resource_codes: Codes = field(default_factory=lambda: CODES)
    resource_ranges: Codes = field(default_factory=lambda: ALL_RANGES)

    @classmethod
    def of(cls, selection: FamilySelection, status_codes: str, request_times: bool) -> View:
        return cls(
            selection,
            NO_CODES if status_codes == "classes" else CODES,
            ALL_RANGES if request_times else NO_RANGES,
        )


FULL = View()

# The scopes of counted keys a view exports: account totals, and each resource series.
SCOPES = ("account", "resource")


def exported_keys(view: View) -> dict[str, list[str]]:
    """Per scope, the counted keys (COUNT_KEYS names) the view publishes as counter samples,
    and (scope ``late``) which lateness counters (requests, hit_bytes). Kept in the state
    file, so a key published only after a restart (a family newly included, finer status
    codes) starts at 0 and counts only what follows (``exposure``, ``state.parse``)."""
    wants = view.selection.wants
    out: dict[str, list[str]] = {}
    for scope, fam, codes in (
        ("account", ACCOUNT, CODES),
        ("resource", RESOURCE, view.resource_codes),
    ):
        keys: list[str] = []
        if wants(fam.requests_total.name):
            keys += [f"{side}_requests_total" for side in SIDES]
        if wants(fam.responses_total.name):
            keys += [f"{side}_status_{code}" for side in SIDES for code, _ in codes[side]]
        if wants(fam.responses_by_class_total.name):
            keys += [f"{side}_status_{code}" for side in SIDES for code, _ in CLASSES[side]]
        if wants(fam.edge_hit_bytes_total.name):
            keys.append("edge_hit_bytes")
        if wants(fam.transferred_bytes_total.name):
            keys += list(TRANSFERRED.values())
        out[scope] = keys
    out["late"] = [
        part
        for part, spec in (("requests", LATE_REQUESTS), ("hit_bytes", LATE_HIT_BYTES))
        if wants(spec.name)
    ]
    return out


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
    adds each family's values at once (docs/performance.md#optimisations, 27).
    """
    wants = view.selection.wants
    before = previous.samples if previous is not None else {}
    carried = Carry.of(previous.carry if previous is not None else None, (account, view))
    layouts = Layouts.of(view)
    hold = Hold(served)
    acc = Scope(layouts.account_counted)
    res = Scope(layouts.resource_counted, carried.get("counted"))
    info = Scope(INFO, carried.get("info")) if wants(RESOURCE_INFO.name) else None
    _counters(acc, (account,), ledger.totals, ledger.totals_shown, hold)
    for key in sorted(ledger.series):
        s = ledger.series[key]
        _counters(res, (account, key), s.values, s.shown, hold)
        if info is not None:
            info.add((account, key, s.name, s.cname), (1.0,))
    made, _ = acc.samples(before)
    scopes: dict[str, Rows] = {}
    made |= _taken(res.samples(before), scopes, "counted")
    if info is not None:
        made |= _taken(info.samples(before), scopes, "info")
    for spec in LATE_SPECS:
        if wants(spec.name):
            made[spec] = Samples(like=before.get(spec), group=1)
    _late(made, account, ledger, hold)
    ledger.unshown = hold.held
    if hold.new:
        ledger.zero_seq = -1
        ledger.unpublished += hold.fresh
        ledger.unpublished_late += hold.fresh_late
    gauged = Scope(layouts.resource_gauged, carried.get("gauged"))
    made |= _latest(account, latest, Scope(layouts.account_gauged), gauged, before, scopes)
    carry = Carry((account, view), scopes)
    return Fragment({spec: made[spec] for spec in SPECS if spec in made}, carry=carry)


def _latest(
    account: str,
    latest: Latest | None,
    acc: Scope,
    res: Scope,
    before: Mapping[MetricSpec, Samples],
    scopes: dict[str, Rows],
) -> dict[MetricSpec, Samples]:
    """The gauges of the latest window (none before the first read), the account's in
    ``acc``, each resource's in ``res`` (its rows kept in ``scopes``)."""
    if latest is not None:
        w = latest.window
        seconds, end = float(w.end - w.start), float(w.end)
        _gauges(acc, (account,), latest.totals, seconds, end)
        for r in latest.named:
            _gauges(res, (account, r.id, r.name, r.cname), r.row, seconds, end)
        if latest.other is not None:
            _gauges(res, (account, OTHER, OTHER, ""), latest.other, seconds, end)
    made = acc.samples(before)[0]
    made |= _taken(res.samples(before), scopes, "gauged")
    return made


def _taken(
    built: tuple[dict[MetricSpec, Samples], Rows], scopes: dict[str, Rows], name: str
) -> dict[MetricSpec, Samples]:
    scopes[name] = built[1]
    return built[0]


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
