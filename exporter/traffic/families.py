"""Traffic metric families: their declarations, the codes, classes and size ranges they carry,
and which of them a fragment exports (``View``); ``transform`` builds the fragment.

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

from dataclasses import dataclass, field

from exporter.exposition import EVERYTHING, FamilySelection, MetricSpec
from exporter.support.platform_fields import SIDES, SIZE_RANGES, STATUS_CODES
from exporter.traffic.parse import (
    COUNT_INDEX,
    GAUGE_INDEX,
    TRANSFERRED,
)

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
    return Families(**_gauge_specs(p, of, base), **_counter_specs(p, of, counted))


def _gauge_specs(p: str, of: str, base: tuple[str, ...]) -> dict[str, MetricSpec]:
    """The gauge families of a scope (prefix ``p``), describing the latest window."""
    win = " in the latest complete window"
    return {
        "bandwidth": MetricSpec(
            p + "bandwidth_bytes_per_second", "gauge",
            f"Bandwidth of {of}{win}, bytes per second (the platform's bits/s divided by 8).",
            (*base, "side"), "bytes/s", "edge_bandwidth, origin_bandwidth",
        ),
        "requests_per_second": MetricSpec(
            p + "requests_per_second", "gauge", f"Request rate of {of}{win}.",
            (*base, "side"), "requests/s", "edge_requests_total, origin_requests_total",
        ),
        "responses_per_second": MetricSpec(
            p + "responses_per_second", "gauge",
            f"Response rate of {of} by specific status code (never a class){win}.",
            (*base, "side", "code"), "responses/s", "edge_status_<code>, origin_status_<code>",
        ),
        "responses_by_class_per_second": MetricSpec(
            p + "responses_by_class_per_second", "gauge",
            f"Response rate of {of} by status class (2xx ... 5xx){win}.",
            (*base, "side", "class"), "responses/s", "edge_status_<N>xx, origin_status_<N>xx",
        ),
        "response_time_median": MetricSpec(
            p + "response_time_median_seconds", "gauge",
            f"Median load time of successful (2xx) responses of {of} by size range{win}.",
            (*base, "side", "size_range"), "seconds", "edge_request_time, origin_request_time",
        ),
        "edge_hit_ratio": MetricSpec(
            p + "edge_hit_ratio", "gauge",
            f"Cached traffic divided by total edge traffic of {of}{win}.",
            base, "ratio", "edge_hit_ratio",
        ),
        "edge_hit_bytes_per_second": MetricSpec(
            p + "edge_hit_bytes_per_second", "gauge",
            f"Bytes per second of {of} served from edge cache hits{win}.",
            base, "bytes/s", "edge_hit_bytes",
        ),
        "window_end": MetricSpec(
            p + "window_end_timestamp_seconds", "gauge",
            "Unix time of the end of the window the traffic gauges describe.",
            base, "seconds", "end of the latest first-read window",
        ),
    }  # fmt: skip


def _counter_specs(p: str, of: str, counted: tuple[str, ...]) -> dict[str, MetricSpec]:
    """The counter families of a scope (prefix ``p``): each minute counted once."""
    return {
        "requests_total": MetricSpec(
            p + "requests_total", "counter",
            f"Requests to {of}; each minute counted once, late increases added on re-read.",
            (*counted, "side"), "requests", "edge_requests_total, origin_requests_total",
        ),
        "responses_total": MetricSpec(
            p + "responses_total", "counter",
            f"Responses of {of} by specific status code (never a class); each minute counted once, "
            "late increases added on re-read.",
            (*counted, "side", "code"), "responses", "edge_status_<code>, origin_status_<code>",
        ),
        "responses_by_class_total": MetricSpec(
            p + "responses_by_class_total", "counter",
            f"Responses of {of} by status class (2xx ... 5xx); each minute counted once, late "
            "increases added on re-read.",
            (*counted, "side", "class"), "responses", "edge_status_<N>xx, origin_status_<N>xx",
        ),
        "edge_hit_bytes_total": MetricSpec(
            p + "edge_hit_bytes_total", "counter",
            f"Bytes of {of} served from edge cache hits; each minute counted once, late increases "
            "added on re-read.",
            counted, "bytes", "edge_hit_bytes",
        ),
        "transferred_bytes_total": MetricSpec(
            p + "transferred_bytes_total", "counter",
            f"Bytes delivered by {of}: each minute's bandwidth x its seconds / 8, counted once, "
            "late increases added on re-read.",
            (*counted, "side"), "bytes", "edge_bandwidth, origin_bandwidth x window seconds / 8",
        ),
    }  # fmt: skip


ACCOUNT = _families("account", ACCOUNT_LABELS, ACCOUNT_LABELS)
RESOURCE = _families("resource", RESOURCE_LABELS, COUNTER_LABELS)
RESOURCE_INFO = MetricSpec(
    "cdnvideo_resource_info", "gauge",
    "Always 1: the name and cname of each resource with counters (and __other__); join with "
    "group_left to label the resource counters.",
    RESOURCE_LABELS, "", "resource, resource_name, cname of the per-resource reply",
)  # fmt: skip
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
_STATUS = {s: tuple(COUNT_INDEX[f"{s}_status_{c}"] for c in STATUS_CODES) for s in SIDES}
_RT = {s: tuple(GAUGE_INDEX[f"{s}_request_time_{r}"] for r in SIZE_RANGES) for s in SIDES}

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
    codes) starts at 0 and counts only what follows (``exposure``, ``state_read.parse``)."""
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
