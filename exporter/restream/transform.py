"""Pure restream transforms: resources + status (+ history) and the time -> a Fragment.

Backup targets: the platform reports a backup as a status entry (and history entries) of its
own. A status entry whose ``target_url`` is the ``backup.target_url`` of a configured entry
with the same ``source`` belongs to that entry: it gets the entry's schedule and its own
``target``/``target_key`` labels (the key the platform reports for it, fingerprinted).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from exporter.exposition import EVERYTHING, FamilySelection, Fragment, FragmentBuilder, MetricSpec
from exporter.restream import families as f
from exporter.restream.identity import KeyFingerprint, TargetId, in_schedule, target_id, url_label
from exporter.restream.reply import HistoryPoint, RestreamEntry, RestreamResource, StatusRecord


@dataclass(frozen=True)
class Change:
    """The latest status change of one target: when, and to which code."""

    time: float
    code: int


class _Entries:
    """Configured restream entries found by (resource, source, URL[, key]); URLs compared
    without credentials, so a status URL that lost its userinfo still matches."""

    def __init__(self, resources: Iterable[RestreamResource], fingerprint: KeyFingerprint) -> None:
        self.primary: dict[tuple[str, str, str, str], RestreamEntry] = {}
        self.backup: dict[tuple[str, str, str], RestreamEntry] = {}
        self._fingerprint = fingerprint
        for res in resources:
            for e in res.restreams:
                src = self._label(e.source)
                self.primary.setdefault(
                    (res.resource_id, src, self._label(e.target_url), e.target_key), e
                )
                if e.backup_url:
                    self.backup.setdefault((res.resource_id, src, self._label(e.backup_url)), e)

    def _label(self, url: str) -> str:
        return url_label(url, self._fingerprint)

    def find(self, resource_id: str, source: str, url: str, key: str) -> RestreamEntry | None:
        src, target = self._label(source), self._label(url)
        found = self.primary.get((resource_id, src, target, key))
        return found or self.backup.get((resource_id, src, target))


class _Rows:
    """Adds samples once per label set (two targets can collapse into one label set when they
    differ only in credentials); returns whether the row was new."""

    def __init__(self, builder: FragmentBuilder) -> None:
        self._b = builder
        self._seen: set[tuple[str, tuple[str, ...]]] = set()
        self.duplicates = 0

    def add(self, spec: MetricSpec, labels: tuple[str, ...], value: float) -> bool:
        key = (spec.name, labels)
        if key in self._seen:
            self.duplicates += 1
            return False
        self._seen.add(key)
        self._b.add(spec, labels, value)
        return True


def status_fragment(
    account: str,
    resources: Sequence[RestreamResource],
    statuses: Sequence[StatusRecord],
    now: float,
    fingerprint: KeyFingerprint,
    selection: FamilySelection = EVERYTHING,
) -> tuple[Fragment, int]:
    """The status families of one account, and how many duplicate label sets were dropped.

    ``scheduled`` is exported for every reported target matched to a configured entry and for
    every configured primary target the status reply does not list; a reported target with no
    configured entry has no ``scheduled`` series (its schedule is unknown).
    """
    b = selection.builder()
    b.declare(*f.STATUS_SPECS)
    rows = _Rows(b)
    seen: set[str] = set()
    for res in resources:
        if res.resource_id in seen:
            rows.duplicates += 1
            continue
        seen.add(res.resource_id)
        name, kind = url_label(res.name, fingerprint), url_label(res.type, fingerprint)
        rows.add(f.RESOURCE_INFO, (account, res.resource_id, name, kind), 1)
        rows.add(f.RESOURCE_ACTIVE, (account, res.resource_id), 1 if res.active else 0)
    entries = _Entries(resources, fingerprint)
    reported: set[TargetId] = set()
    for rec in statuses:
        for t in rec.targets:
            tid = target_id(rec.resource_id, t.source, t.target_url, t.target_key, fingerprint)
            labels = (account, *tid)
            if not rows.add(f.STATUS_CODE, labels, t.code):
                continue
            reported.add(tid)
            rows.add(f.UP, labels, 1 if t.code == 0 else 0)
            description = url_label(t.description, fingerprint, t.target_key)
            rows.add(f.STATUS_INFO, (*labels, str(t.code), description), 1)
            entry = entries.find(rec.resource_id, t.source, t.target_url, t.target_key)
            if entry is not None:
                rows.add(f.SCHEDULED, labels, 1 if in_schedule(entry.schedule, now) else 0)
    for res in resources:
        for e in res.restreams:
            tid = target_id(res.resource_id, e.source, e.target_url, e.target_key, fingerprint)
            if tid not in reported:
                rows.add(f.SCHEDULED, (account, *tid), 1 if in_schedule(e.schedule, now) else 0)
    return _sorted(b.build()), rows.duplicates


def fold_history(
    state: Mapping[TargetId, Change],
    resource_id: str,
    points: Iterable[HistoryPoint],
    fingerprint: KeyFingerprint,
) -> dict[TargetId, Change]:
    """Merge history points of one resource into the latest change per target.

    A point with the same code as the change already known is a repeat, not a change, and
    keeps the earlier time; points older than the known change are ignored (re-read overlap).
    """
    return fold_histories(state, [(resource_id, points)], fingerprint)


def fold_histories(
    state: Mapping[TargetId, Change],
    reads: Iterable[tuple[str, Iterable[HistoryPoint]]],
    fingerprint: KeyFingerprint,
) -> dict[TargetId, Change]:
    """``fold_history`` of each ``(resource_id, points)`` in turn, the state copied once."""
    out = dict(state)
    for resource_id, points in reads:
        for p in sorted(points, key=lambda p: p.time):
            tid = target_id(resource_id, p.source, p.target_url, p.target_key, fingerprint)
            known = out.get(tid)
            if known is None or (p.time > known.time and p.code != known.code):
                out[tid] = Change(p.time, p.code)
    return out


def history_fragment(
    account: str, state: Mapping[TargetId, Change], selection: FamilySelection = EVERYTHING
) -> Fragment:
    b = selection.builder()
    b.declare(*f.HISTORY_SPECS)
    for tid in sorted(state):
        b.add(f.STATUS_CHANGED, (account, *tid), state[tid].time)
    return b.build()


def _sorted(fragment: Fragment) -> Fragment:
    """The same samples ordered by labels, so the exposition is stable between polls."""
    return Fragment({spec: tuple(sorted(rows)) for spec, rows in fragment.samples.items()})
