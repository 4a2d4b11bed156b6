"""The pieces the landing page is built of, shared by the page (exporter.web.landing) and each
area's part of it (exporter.web.landing_parts): escaping, times, tables that fold on a phone,
and ``AccountView``/``LandingPart``, what a part reads and gives."""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from prometheus_client import Gauge

from exporter.runtime.areas import Areas
from exporter.runtime.context import Context
from exporter.runtime.summary import AccountSummary

MAX_ROWS = 50


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


def table(
    headers: Iterable[str],
    rows: list[list[str]],
    css: str,
    ident: str = "",
    problem: Callable[[int], bool] = lambda row: False,
) -> str:
    """A table that a narrow screen shows as one block a row, each cell named by its
    column (``data-label``, see ``STYLE``), so a phone needs no sideways scrolling. A row
    for which ``problem(index)`` holds is marked (``tr.problem``: the warning colour)."""
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


def _by_account_area(gauge: Gauge) -> dict[tuple[str, str], float]:
    """(account, area) -> the gauge's value, read once per page (not once per row)."""
    out: dict[tuple[str, str], float] = {}
    for family in gauge.collect():
        for sample in family.samples:
            out[(sample.labels.get("account", ""), sample.labels.get("area", ""))] = sample.value
    return out


@dataclass(frozen=True)
class Times:
    """What the page reads of the self-metrics once: last success and next poll per
    (account, area)."""

    successes: dict[tuple[str, str], float]
    next_polls: dict[tuple[str, str], float]


def read_times(ctx: Context) -> Times:
    return Times(
        _by_account_area(ctx.metrics.last_success), _by_account_area(ctx.metrics.next_poll)
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


def none(
    known: bool, current: bool, last_ok: float | None, now: float, texts: tuple[str, str]
) -> str:
    """Nothing failing to list: ``all_good`` only while the figures are ``current`` (fresh,
    and the area's last poll succeeded); otherwise when it was last seen healthy, in the
    warning colour, never a stale "all good"."""
    all_good, nothing = texts
    if not known:
        return f'<p class="none">{e(nothing)}</p>'
    if current:
        return f'<p class="none">{e(all_good)}</p>'
    seen = "never" if not last_ok else ago(now - last_ok)
    return f'<p class="none stale" data-state="stale">Last seen healthy {e(seen)}.</p>'


def config_text(what: str) -> str:
    """``what`` HTML-escaped, with its `config keys` as code."""
    parts = e(what).split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


@dataclass(frozen=True)
class AccountView:
    """What an area's part of the page reads of one account."""

    ctx: Context
    areas: Areas
    account: str
    index: int  # the account's place on the page (its anchors: ``problems.anchor``)
    summary: AccountSummary
    now: float
    times: Times
    clean: Callable[[str], str]  # platform text masked by structure (``SecretMask.text``)


@dataclass(frozen=True)
class LandingPart:
    """One area's part of an account's section: lines of its ``<dl>`` (``<dt>``/``<dd>``
    pairs) and the blocks below it (headings, charts, tables), each HTML."""

    facts: Callable[[AccountView], str]
    blocks: Callable[[AccountView], str]


def nothing_failing(
    view: AccountView, area: str, known: bool, is_stale: bool, texts: tuple[str, str]
) -> str:
    """``none`` for an area's table with no row: current while its figures are fresh and its
    last poll of the account did not fail."""
    current = not is_stale and view.ctx.runner.healthy(area, view.account) is not False
    return none(known, current, view.times.successes.get((view.account, area)), view.now, texts)
