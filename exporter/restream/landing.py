"""The restream area on the landing page: targets failing, and those stopped on purpose."""

from __future__ import annotations

from collections.abc import Callable

from exporter.areakit.page import (
    AccountView,
    Finding,
    LandingPart,
    anchor,
    e,
    plural,
    table,
    unexported,
)
from exporter.restream.summary import RestreamSummary, TargetState


def blocks(view: AccountView) -> str:
    clean = view.clean
    r = view.summary.of(RestreamSummary)
    failing = [_target_row(t, clean) for t in r.failing]
    stopped = [[*_target_row(t, clean), e(", ".join(t.stopped_because))] for t in r.stopped]
    restream_html = (
        table(
            ("Resource", "Source", "Target", "Code", "Description"),
            failing,
            "restream",
            anchor(view.index, "restream"),
            lambda i: True,
        )
        if failing
        else view.nothing_failing(
            "restream",
            r.known,
            r.stale,
            (
                "No active, scheduled target failing." if stopped else "All restream targets OK.",
                "No restream status yet.",
            ),
        )
    )
    if stopped:
        restream_html += "<h3>Restream targets stopped on purpose</h3>" + table(
            ("Resource", "Source", "Target", "Code", "Description", "Why"),
            stopped,
            "restream-stopped",
        )
    restream_gone = unexported(r.left_out)
    restream_html = f'<p class="none">{restream_gone}</p>' if restream_gone else restream_html
    return f"<h3>Restream targets failing</h3>{restream_html}"


def findings(view: AccountView) -> tuple[Finding, ...]:
    failing = len(view.summary.of(RestreamSummary).failing)
    if not failing:
        return ()
    return (
        Finding("restream", plural(failing, "restream target failing", "restream targets failing")),
    )


def stale(view: AccountView) -> tuple[str, ...]:
    return ("restream status",) if view.summary.of(RestreamSummary).stale else ()


PART = LandingPart(blocks=blocks, findings=findings, stale=stale)


def _target_row(t: TargetState, clean: Callable[[str], str]) -> list[str]:
    return [
        f"<code>{e(clean(t.resource_id))}</code>",
        e(clean(t.source)),
        e(clean(t.target)),
        f"{t.code:g}",
        e(clean(t.description)),
    ]
