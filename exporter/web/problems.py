"""What is wrong, per account, as the landing page opens with it: areas down, failing restream
targets, dead DVR nodes, stale figures; each with a link to its rows further down.

Reads the same things as the rest of the page (the runner's outcomes and the areas'
summaries), so the line at the top and the rows below never disagree.
"""

from __future__ import annotations

import html
from dataclasses import dataclass

from exporter.dvr.summary import DvrSummary
from exporter.restream.summary import RestreamSummary
from exporter.runtime.areas import Areas
from exporter.runtime.context import Context
from exporter.runtime.summary import AccountSummary


def anchor(index: int, part: str = "") -> str:
    """The id of the ``index``-th account's section (or of one ``part`` of it): made of the
    position, never of the account's name, so any name gives a valid, safe id."""
    return f"account-{index}" + (f"-{part}" if part else "")


@dataclass(frozen=True)
class Problems:
    """What is wrong with one account (all empty or 0: nothing)."""

    account: str
    index: int
    areas_down: tuple[str, ...]  # the titles of the areas whose last poll failed
    failing_targets: int
    dead_nodes: int
    stale: tuple[str, ...]  # figures shown older than they should be
    waiting: bool = False  # an area has not been polled yet

    @property
    def any(self) -> bool:
        return bool(self.areas_down or self.failing_targets or self.dead_nodes or self.stale)


def problems(ctx: Context, areas: Areas, account: str, index: int, s: AccountSummary) -> Problems:
    down = tuple(
        a.title
        for a in areas
        if a.enabled(ctx.settings) and ctx.runner.healthy(a.name, account) is False
    )
    r, d = s.of(RestreamSummary), s.of(DvrSummary)
    stale = tuple(
        title
        for title, is_stale in (("restream status", r.stale), ("DVR status", d.stale))
        if is_stale
    )
    waiting = any(
        a.enabled(ctx.settings)
        and ctx.runner.healthy(a.name, account) is None
        and ctx.runner.not_configured(a.name, account) is None
        for a in areas
    )
    return Problems(account, index, down, len(r.failing), len(d.dead), stale, waiting)


def _link(p: Problems, part: str, text: str) -> str:
    return f'<a href="#{anchor(p.index, part)}">{html.escape(text)}</a>'


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def summary_line(p: Problems) -> str:
    """One line: the account, then each problem linked to its rows; or that all is well."""
    name = f'<a href="#{anchor(p.index)}">{html.escape(p.account)}</a>'
    if not p.any:
        css, text = ("pending", "waiting for its first polls") if p.waiting else ("ok", "all OK")
        return f'<li class="{css}" data-for="{html.escape(p.account)}">{name}: {text}</li>'
    parts = []
    if p.areas_down:
        parts.append(_link(p, "areas", "down: " + ", ".join(p.areas_down)))
    if p.failing_targets:
        text = _plural(p.failing_targets, "restream target failing", "restream targets failing")
        parts.append(_link(p, "restream", text))
    if p.dead_nodes:
        parts.append(_link(p, "dvr", _plural(p.dead_nodes, "dead DVR node", "dead DVR nodes")))
    if p.stale:
        parts.append(_link(p, "areas", "stale: " + ", ".join(p.stale)))
    return (
        f'<li class="problem" data-problem data-for="{html.escape(p.account)}">'
        f"{name}: {'; '.join(parts)}</li>"
    )


def summary_html(all_problems: list[Problems]) -> str:
    """The page's first block: the accounts with problems first, then the ones without."""
    if not all_problems:
        return ""
    ordered = sorted(all_problems, key=lambda p: (not p.any, p.index))
    wrong = sum(p.any for p in all_problems)
    waiting = sum(p.waiting and not p.any for p in all_problems)
    if wrong:
        head = f"{wrong} of {len(all_problems)} account(s) with problems"
    elif waiting:
        head = f"Nothing wrong seen yet: {waiting} account(s) waiting for their first polls"
    else:
        head = f"All {len(all_problems)} account(s) OK"
    items = "".join(summary_line(p) for p in ordered)
    css = "problem" if wrong else "ok"
    return (
        f'<section class="summary" aria-label="What is wrong">'
        f'<h2 class="{css}">{html.escape(head)}</h2><ul>{items}</ul></section>'
    )
