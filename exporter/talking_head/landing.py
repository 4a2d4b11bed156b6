"""The talking-head area on the landing page: the quota left and the admin-submitted videos."""

from __future__ import annotations

from exporter.areakit.page import AccountView, LandingPart, e, stale, unexported
from exporter.talking_head.summary import TalkingHeadSummary


def facts(view: AccountView) -> str:
    th = view.summary.of(TalkingHeadSummary)
    quota = (
        '<span class="pending">unknown</span>'
        if th.quota_left is None
        else f"{e(f'{th.quota_left:g}')}"
        + (f" of {e(f'{th.quota_limit:g}')}" if th.quota_limit is not None else "")
    ) + stale(th.stale)
    quota = unexported(th.quota_left_out) or quota
    task_text = ", ".join(f"{e(status)}: {n:g}" for status, n in th.tasks) or "none"
    task_text = unexported(th.tasks_left_out) or task_text
    return (
        f'<dt>Talking-head quota left</dt><dd class="quota">{quota}</dd>'
        f'<dt>Admin-submitted videos</dt><dd class="tasks">{task_text}</dd>'
    )


PART = LandingPart(facts=facts)
