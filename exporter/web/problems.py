"""What is wrong, per account, as the landing page opens with it: areas down, and what each
area's part finds (failing restream targets, dead DVR nodes, stale figures); each with a link
to its rows further down.

Reads the same things as the rest of the page (the runner's outcomes and the areas'
summaries, through the areas' parts), so the line at the top and the rows below never
disagree.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass

from exporter.areakit.page import Finding, LandingPart, anchor
from exporter.web.pagekit import AccountView


@dataclass(frozen=True)
class Problems:
    """What is wrong with one account (all empty: nothing)."""

    account: str
    index: int
    areas_down: tuple[str, ...]  # the titles of the areas whose last poll failed
    findings: tuple[Finding, ...]  # what the areas' parts find, in the registry's order
    stale: tuple[str, ...]  # figures shown older than they should be
    waiting: bool = False  # an area has not been polled yet

    @property
    def any(self) -> bool:
        return bool(self.areas_down or self.findings or self.stale)


def problems(view: AccountView, parts: Sequence[LandingPart]) -> Problems:
    ctx, account = view.ctx, view.account
    down = tuple(
        a.title
        for a in view.areas
        if a.enabled(ctx.settings) and ctx.runner.healthy(a.name, account) is False
    )
    found = tuple(f for part in parts for f in part.findings(view))
    stale = tuple(title for part in parts for title in part.stale(view))
    waiting = any(
        a.enabled(ctx.settings)
        and ctx.runner.healthy(a.name, account) is None
        and ctx.runner.not_configured(a.name, account) is None
        for a in view.areas
    )
    return Problems(account, view.index, down, found, stale, waiting)


def _link(p: Problems, part: str, text: str) -> str:
    return f'<a href="#{anchor(p.index, part)}">{html.escape(text)}</a>'


def summary_line(p: Problems) -> str:
    """One line: the account, then each problem linked to its rows; or that all is well."""
    name = f'<a href="#{anchor(p.index)}">{html.escape(p.account)}</a>'
    if not p.any:
        css, text = ("pending", "waiting for its first polls") if p.waiting else ("ok", "all OK")
        return f'<li class="{css}" data-for="{html.escape(p.account)}">{name}: {text}</li>'
    parts = []
    if p.areas_down:
        parts.append(_link(p, "areas", "down: " + ", ".join(p.areas_down)))
    parts += [_link(p, f.part, f.text) for f in p.findings]
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
