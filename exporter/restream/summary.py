"""The restream area's landing summary of one account: targets failing or stopped on purpose."""

from __future__ import annotations

from dataclasses import dataclass

from exporter.areakit.summary import Published, left_out, published
from exporter.exposition import FamilySelection, Store, StoreKey
from exporter.restream import families as restream


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


def summary(store: Store, account: str) -> RestreamSummary:
    """The landing page's restream figures of ``account`` (``AreaDeclaration.summary``)."""
    return restream_summary(published(store, StoreKey("restream", account)), store.selection)
