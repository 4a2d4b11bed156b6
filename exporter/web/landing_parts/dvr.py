"""The DVR area on the landing page: dead nodes, or why the area is not configured."""

from __future__ import annotations

from exporter.dvr.summary import DvrSummary
from exporter.web.pagekit import (
    AccountView,
    LandingPart,
    config_text,
    e,
    nothing_failing,
    table,
    unexported,
)
from exporter.web.problems import anchor


def facts(view: AccountView) -> str:
    return ""


def blocks(view: AccountView) -> str:
    ctx, account, clean = view.ctx, view.account, view.clean
    d = view.summary.of(DvrSummary)
    dead = [[e(clean(stream)), e(clean(host))] for stream, host in d.dead]
    dvr_unconfigured = ctx.runner.not_configured(view.areas.dvr.name, account)
    dvr_html = (
        table(("Stream", "Node"), dead, "dvr", anchor(view.index, "dvr"), lambda i: True)
        if dead
        else nothing_failing(
            view, "dvr", d.known, d.stale, ("All DVR nodes alive.", "No DVR status yet.")
        )
    )
    if dvr_unconfigured is not None:
        dvr_html = (
            f'<p class="none unconfigured">Not configured: {config_text(dvr_unconfigured)}</p>'
        )
    dvr_gone = unexported(d.left_out)
    dvr_html = f'<p class="none">{dvr_gone}</p>' if dvr_gone else dvr_html
    return f"<h3>Dead DVR nodes</h3>{dvr_html}"


PART = LandingPart(facts, blocks)
