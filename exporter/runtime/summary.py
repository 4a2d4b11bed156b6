"""What the landing page shows of one account, as typed values each area derives from what it
published (its own fragment, read through its own MetricSpecs): the page renders these and
knows no metric name.

A family left out by ``metrics.include``/``exclude`` is never built, so a figure that needs one
is reported as ``left_out`` (the family names) rather than read as "nothing wrong".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from exporter.dvr import families as dvr
from exporter.exposition import FamilySelection, Fragment, MetricSpec, Store, StoreKey
from exporter.restream import families as restream
from exporter.talking_head import families as th
from exporter.talking_head.tasks import TASKS
from exporter.traffic import families as traffic
from exporter.traffic.ledger import OTHER

TOP_RESOURCES = 10


@dataclass(frozen=True)
class Published:
    """An area's latest fragment for the account: whether there is one and if it is stale."""

    fragment: Fragment | None
    stale: bool

    @property
    def known(self) -> bool:
        return self.fragment is not None

    def rows(self, spec: MetricSpec) -> list[tuple[dict[str, str], float]]:
        """Every sample of ``spec`` as (labels by name, value)."""
        if self.fragment is None:
            return []
        return [
            (dict(zip(spec.labels, values, strict=True)), value)
            for values, value in self.fragment.samples.get(spec, ())
        ]

    def value(self, spec: MetricSpec, **labels: str) -> float | None:
        return None if self.fragment is None else self.fragment.value(spec, **labels)


def published(store: Store, key: StoreKey) -> Published:
    fresh = store.fragment(key)
    if fresh is not None:
        return Published(fresh, False)
    old = store.fragment(key, include_stale=True)
    return Published(old, old is not None)


def left_out(selection: FamilySelection, specs: Sequence[MetricSpec]) -> tuple[str, ...]:
    return tuple(s.name for s in specs if not selection.wants(s.name))


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


@dataclass(frozen=True)
class TargetState:
    """A restream target whose status code is not 0."""

    resource_id: str
    source: str
    target: str
    code: float
    description: str
    stopped_because: tuple[str, ...]  # empty: failing; else why it is stopped on purpose


@dataclass(frozen=True)
class RestreamSummary:
    known: bool
    stale: bool
    not_ok: tuple[TargetState, ...]
    left_out: tuple[str, ...]

    @property
    def failing(self) -> tuple[TargetState, ...]:
        return tuple(t for t in self.not_ok if not t.stopped_because)

    @property
    def stopped(self) -> tuple[TargetState, ...]:
        return tuple(t for t in self.not_ok if t.stopped_because)


def _target(labels: dict[str, str]) -> tuple[str, ...]:
    return tuple(labels[k] for k in ("resource_id", "source", "target", "target_key"))


def restream_summary(p: Published, selection: FamilySelection) -> RestreamSummary:
    """Targets with a code other than 0: failing, or stopped on purpose when their resource is
    inactive or they are outside their schedule (as the CdnvideoRestreamTargetFailing alert
    sees it; unknown activity or schedule counts as failing)."""
    descriptions = {_target(lbl): lbl["description"] for lbl, _ in p.rows(restream.STATUS_INFO)}
    inactive = {lbl["resource_id"] for lbl, v in p.rows(restream.RESOURCE_ACTIVE) if v == 0}
    unscheduled = {_target(lbl) for lbl, v in p.rows(restream.SCHEDULED) if v == 0}
    not_ok = []
    for lbl, code in p.rows(restream.STATUS_CODE):
        if code == 0:
            continue
        ident = _target(lbl)
        why = tuple(
            reason
            for reason, applies in (
                ("resource inactive", lbl["resource_id"] in inactive),
                ("outside its schedule", ident in unscheduled),
            )
            if applies
        )
        not_ok.append(
            TargetState(
                lbl["resource_id"],
                lbl["source"],
                lbl["target"],
                code,
                descriptions.get(ident, ""),
                why,
            )
        )
    specs = (
        restream.STATUS_CODE,
        restream.STATUS_INFO,
        restream.RESOURCE_ACTIVE,
        restream.SCHEDULED,
    )
    return RestreamSummary(p.known, p.stale, tuple(not_ok), left_out(selection, specs))


@dataclass(frozen=True)
class DvrSummary:
    known: bool
    stale: bool
    dead: tuple[tuple[str, str], ...]  # (stream, host) of nodes not alive
    left_out: tuple[str, ...]


def dvr_summary(p: Published, selection: FamilySelection) -> DvrSummary:
    dead = tuple((lbl["stream"], lbl["host"]) for lbl, alive in p.rows(dvr.ALIVE) if alive == 0)
    return DvrSummary(p.known, p.stale, dead, left_out(selection, (dvr.ALIVE,)))


@dataclass(frozen=True)
class TalkingHeadSummary:
    stale: bool
    quota_left: float | None
    quota_limit: float | None
    quota_left_out: tuple[str, ...]
    tasks: tuple[tuple[str, float], ...]  # (status, count) of admin-submitted videos, count > 0
    tasks_left_out: tuple[str, ...]


def talking_head_summary(
    quota: Published, tasks: Published, account: str, selection: FamilySelection
) -> TalkingHeadSummary:
    return TalkingHeadSummary(
        stale=quota.stale,
        quota_left=quota.value(th.QUOTA_LEFT, account=account),
        quota_limit=quota.value(th.QUOTA_LIMIT, account=account),
        quota_left_out=left_out(selection, (th.QUOTA_LEFT,)),
        tasks=tuple((lbl["status"], v) for lbl, v in tasks.rows(TASKS) if v),
        tasks_left_out=left_out(selection, (TASKS,)),
    )


@dataclass(frozen=True)
class AccountSummary:
    traffic: TrafficSummary
    restream: RestreamSummary
    dvr: DvrSummary
    talking_head: TalkingHeadSummary


def account_summary(store: Store, account: str) -> AccountSummary:
    """The landing page's figures of ``account``, from what the areas published."""
    sel = store.selection
    return AccountSummary(
        traffic_summary(published(store, StoreKey("traffic", account)), account, sel),
        restream_summary(published(store, StoreKey("restream", account)), sel),
        dvr_summary(published(store, StoreKey("dvr", account)), sel),
        talking_head_summary(
            published(store, StoreKey("talking_head", account)),
            published(store, StoreKey("talking_head_tasks", account)),
            account,
            sel,
        ),
    )
