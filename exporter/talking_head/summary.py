"""The talking-head area's landing summary of one account: quota, and the admin-submitted
videos by status."""

from __future__ import annotations

from dataclasses import dataclass

from exporter.areakit.summary import Published, left_out, published
from exporter.exposition import FamilySelection, Store, StoreKey
from exporter.talking_head import families as th
from exporter.talking_head.tasks import TASKS


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


def summary(store: Store, account: str) -> TalkingHeadSummary:
    """The landing page's talking-head figures of ``account`` (``AreaDeclaration.summary``)."""
    return talking_head_summary(
        published(store, StoreKey("talking_head", account)),
        published(store, StoreKey("talking_head_tasks", account)),
        account,
        store.selection,
    )
