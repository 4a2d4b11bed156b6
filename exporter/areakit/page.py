"""What an area's part of the landing page is made of (``AreaDeclaration.landing``): the
``LandingPart`` an area package declares, the ``AccountView`` it reads, and the HTML pieces
every part and the page share (escaping, times, tables that fold on a phone, anchors).

The page itself (exporter.web.landing) builds the view and puts the parts together; a part
reads the view only, so no area package imports ``web`` or ``runtime``.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol, TypeVar

from exporter.config import Settings

MAX_ROWS = 50
T = TypeVar("T")


def e(value: object) -> str:
    return html.escape(str(value), quote=True)


def when(ts: float | None, now: float) -> str:
    if ts is None or ts <= 0:
        return '<span class="pending">never</span>'
    stamp = datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return f'<time datetime="{e(stamp)}">{e(stamp)}</time> ({e(ago(now - ts))})'


def ago(seconds: float) -> str:
    if seconds < 0:
        return "in the future"
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f} {unit} ago"
    return f"{seconds:.0f} s ago"


def anchor(index: int, part: str = "") -> str:
    """The id of the ``index``-th account's section (or of one ``part`` of it): made of the
    position, never of the account's name, so any name gives a valid, safe id."""
    return f"account-{index}" + (f"-{part}" if part else "")


def plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def table(
    headers: Iterable[str],
    rows: list[list[str]],
    css: str,
    ident: str = "",
    problem: Callable[[int], bool] = lambda row: False,
) -> str:
    """A table that a narrow screen shows as one block a row, each cell named by its
    column (``data-label``, see the page's style), so a phone needs no sideways scrolling. A
    row for which ``problem(index)`` holds is marked (``tr.problem``: the warning colour)."""
    labels = [e(h) for h in headers]
    head = "".join(f"<th>{h}</th>" for h in labels)
    shown = rows[:MAX_ROWS]
    cells = (
        "".join(f'<td data-label="{h}">{c}</td>' for h, c in zip(labels, r, strict=True))
        for r in shown
    )
    body = "".join(
        f'<tr class="problem" data-problem>{row}</tr>' if problem(i) else f"<tr>{row}</tr>"
        for i, row in enumerate(cells)
    )
    more = (
        f'<p class="none">and {len(rows) - MAX_ROWS} more (see /metrics)</p>'
        if len(rows) > MAX_ROWS
        else ""
    )
    where = f' id="{ident}"' if ident else ""
    return (
        f'<div class="stack"{where}><table class="{css}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>{more}"
    )


def unexported(names: tuple[str, ...]) -> str | None:
    """A note in place of a figure whose families ``metrics.include``/``exclude`` leave out: a
    family that is never built must not read as "all good"."""
    if not names:
        return None
    return (
        f'<span class="pending unexported">not exported ({e(", ".join(names))} left out by '
        "metrics.include/exclude)</span>"
    )


def stale(stale: bool) -> str:
    return ' <span class="stale">(stale)</span>' if stale else ""


def config_text(what: str) -> str:
    """``what`` HTML-escaped, with its `config keys` as code."""
    parts = e(what).split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


class Summaries(Protocol):
    """The areas' summaries of one account (``runtime.summary.AccountSummary``)."""

    def of(self, kind: type[T]) -> T: ...


class AccountView(Protocol):
    """What an area's part of the page reads of one account (``web.pagekit.AccountView``)."""

    @property
    def account(self) -> str: ...

    @property
    def index(self) -> int:
        """The account's place on the page (its anchors: ``anchor``)."""
        ...

    @property
    def summary(self) -> Summaries: ...

    @property
    def now(self) -> float: ...

    @property
    def settings(self) -> Settings: ...

    def clean(self, text: str) -> str:
        """Platform text masked by structure (``SecretMask.text``)."""
        ...

    def area(self, kind: type[T]) -> T:
        """The running area of this class."""
        ...

    def not_configured(self, area: str) -> str | None:
        """Why ``area`` is not configured for the account (None: it is)."""
        ...

    def nothing_failing(
        self, area: str, known: bool, is_stale: bool, texts: tuple[str, str]
    ) -> str:
        """What an area's table with no row says: ``texts`` (all good, nothing yet) while its
        figures are fresh and its last poll did not fail, else when it was last healthy."""
        ...


@dataclass(frozen=True)
class Finding:
    """One problem an area sees in an account, as the page's first block lists it: ``text``
    linked to the rows of ``part`` (``anchor(index, part)``)."""

    part: str
    text: str


@dataclass(frozen=True)
class LandingPart:
    """One area's part of an account's section: lines of its ``<dl>`` (``<dt>``/``<dd>``
    pairs) and the blocks below it (headings, charts, tables), each HTML; ``findings`` and
    ``stale`` (the titles of figures shown older than they should be) are what the page's
    first block says is wrong; ``style`` the CSS the part's blocks need."""

    facts: Callable[[AccountView], str] = lambda view: ""
    blocks: Callable[[AccountView], str] = lambda view: ""
    findings: Callable[[AccountView], tuple[Finding, ...]] = lambda view: ()
    stale: Callable[[AccountView], tuple[str, ...]] = lambda view: ()
    style: str = ""
