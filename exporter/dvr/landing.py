"""The DVR area on the landing page: dead nodes, or why the area is not configured."""

from __future__ import annotations

from exporter.areakit.page import (
    AccountView,
    Finding,
    LandingPart,
    anchor,
    config_text,
    e,
    plural,
    table,
    unexported,
)
from exporter.dvr.area import DvrArea
from exporter.dvr.summary import DvrSummary


def blocks(view: AccountView) -> str:
    clean = view.clean
    d = view.summary.of(DvrSummary)
    dead = [[e(clean(stream)), e(clean(host))] for stream, host in d.dead]
    dvr_unconfigured = view.not_configured(DvrArea.name)
    dvr_html = (
        table(("Stream", "Node"), dead, "dvr", anchor(view.index, "dvr"), lambda i: True)
        if dead
        else view.nothing_failing(
            "dvr", d.known, d.stale, ("All DVR nodes alive.", "No DVR status yet.")
        )
    )
    if dvr_unconfigured is not None:
        dvr_html = (
            f'<p class="none unconfigured">Not configured: {config_text(dvr_unconfigured)}</p>'
        )
    dvr_gone = unexported(d.left_out)
    dvr_html = f'<p class="none">{dvr_gone}</p>' if dvr_gone else dvr_html
    return f"<h3>Dead DVR nodes</h3>{dvr_html}"


def findings(view: AccountView) -> tuple[Finding, ...]:
    dead = len(view.summary.of(DvrSummary).dead)
    return (Finding("dvr", plural(dead, "dead DVR node", "dead DVR nodes")),) if dead else ()


def stale(view: AccountView) -> tuple[str, ...]:
    return ("DVR status",) if view.summary.of(DvrSummary).stale else ()


PART = LandingPart(blocks=blocks, findings=findings, stale=stale)
