"""The traffic area's landing summary of one account: the newest accounted minute, what the
settle reads add, the top resources by edge bandwidth, the standing audit."""

from __future__ import annotations

from dataclasses import dataclass, replace

from exporter.areakit.summary import Published, left_out, published
from exporter.exposition import FamilySelection, Store, StoreKey
from exporter.traffic import audit
from exporter.traffic import families as traffic
from exporter.traffic.ledger import OTHER

TOP_RESOURCES = 10


@dataclass(frozen=True)
class TopResource:
    resource: str
    name: str
    cname: str
    bandwidth: float  # edge, bytes per second
    requests_per_second: float | None  # edge
    hit_ratio: float | None


@dataclass(frozen=True)
class TrafficSummary:
    stale: bool
    window_end: float | None
    window_left_out: tuple[str, ...]
    late_shares: tuple[tuple[int, float], ...]  # (after_minutes, share), by age
    late_left_out: tuple[str, ...]
    top: tuple[TopResource, ...]  # by edge bandwidth, at most TOP_RESOURCES
    top_left_out: tuple[str, ...]
    audit: AuditSummary | None = None


@dataclass(frozen=True)
class AuditSummary:
    """The standing audit of one account: the latest audit, and every minute audited so far."""

    last_at: float | None  # when the latest audit was completed (None: none yet)
    differences: tuple[tuple[str, float], ...]  # (counted key, platform minus counted), not 0
    equal_minutes: float
    differing_minutes: float


def audit_summary(p: Published) -> AuditSummary:
    minutes = {lbl["result"]: v / 60 for lbl, v in p.rows(audit.MINUTES)}  # seconds exported
    last = [v for _, v in p.rows(audit.LAST)]
    diffs = tuple((lbl["family"], v) for lbl, v in p.rows(audit.DIFFERENCE) if v != 0)
    return AuditSummary(
        last[0] if last else None, diffs, minutes.get("equal", 0.0), minutes.get("differs", 0.0)
    )


def traffic_summary(p: Published, account: str, selection: FamilySelection) -> TrafficSummary:
    res = traffic.RESOURCE
    edge = {
        lbl["resource"]: (lbl, v)
        for lbl, v in p.rows(res.bandwidth)
        if lbl["side"] == "edge" and lbl["resource"] != OTHER
    }
    rps = {
        lbl["resource"]: v for lbl, v in p.rows(res.requests_per_second) if lbl["side"] == "edge"
    }
    hits = {lbl["resource"]: v for lbl, v in p.rows(res.edge_hit_ratio)}
    ranked = sorted(edge.items(), key=lambda item: (-item[1][1], item[0]))[:TOP_RESOURCES]
    top = tuple(
        TopResource(r, lbl["resource_name"] or r, lbl["cname"], bw, rps.get(r), hits.get(r))
        for r, (lbl, bw) in ranked
    )
    shares = sorted((int(lbl["after_minutes"]), v) for lbl, v in p.rows(traffic.LATE_SHARE))
    return TrafficSummary(
        stale=p.stale,
        window_end=p.value(traffic.ACCOUNT.window_end, account=account),
        window_left_out=left_out(selection, (traffic.ACCOUNT.window_end,)),
        late_shares=tuple(shares),
        late_left_out=left_out(selection, (traffic.LATE_SHARE,)),
        top=top,
        top_left_out=left_out(selection, (res.bandwidth, res.requests_per_second)),
    )


def summary(store: Store, account: str) -> TrafficSummary:
    """The landing page's traffic figures of ``account`` (``AreaDeclaration.summary``)."""
    p = published(store, StoreKey("traffic", account))
    checked = published(store, StoreKey("traffic_audit", account))
    audited = audit_summary(checked) if checked.fragment is not None else None
    return replace(traffic_summary(p, account, store.selection), audit=audited)
