"""``/``: a plain server-rendered page for people: health per account and area, and links.

It reads only what the pollers already published (each area's summary of its fragments,
``<area>/summary.py``, collected through the registry by ``runtime.summary.account_summary``,
and the self-metrics), so opening it never sends a request
upstream. Every shown value is
HTML-escaped. Platform data is masked by structure on the way out, as the admin API masks it
(URL passwords and secret query values, the exporter's own credentials); never through the log
redactor, whose learned secrets could cut a host name or a description apart.
"""

from __future__ import annotations

import html
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from aiohttp import web
from prometheus_client import Gauge

from exporter import __version__
from exporter.areakit import Area
from exporter.dvr.summary import DvrSummary
from exporter.restream.summary import RestreamSummary, TargetState
from exporter.runtime.areas import Areas
from exporter.runtime.context import Context
from exporter.runtime.summary import AccountSummary, account_summary
from exporter.talking_head.summary import TalkingHeadSummary
from exporter.traffic.summary import TOP_RESOURCES, AuditSummary, TrafficSummary
from exporter.web.charts import STYLE as CHART_STYLE
from exporter.web.charts import account_charts, top_resources
from exporter.web.masking import secret_mask
from exporter.web.problems import anchor, problems, summary_html

# No public home is known to the package, so the page names where the documentation is
# instead of linking to a page that may not exist.
DOCS_NOTE = "Documentation: README.md and docs/ in the source"
MAX_ROWS = 50
REFRESH_SECONDS = 30

HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}

STYLE = """
body{font:15px/1.45 system-ui,sans-serif;margin:0;color:#1d232a;background:#f5f6f8}
header,main{max-width:72rem;margin:0 auto;padding:0 1rem}
header{padding-top:1rem}h1{font-size:1.5rem;margin:.2rem 0}
nav a{margin-right:1rem}.meta{color:#59636e;margin:.2rem 0 .6rem}
section.account{background:#fff;border:1px solid #d8dde3;border-radius:6px;margin:1rem 0;
padding:.6rem 1rem}
h2{font-size:1.2rem;margin:.3rem 0}h3{font-size:1rem;margin:.8rem 0 .3rem}
table{border-collapse:collapse;width:100%;margin:.2rem 0}
th,td{text-align:left;padding:.25rem .5rem;border-bottom:1px solid #eceff2;vertical-align:top}
th{font-weight:600;color:#38424c}
.health{font-weight:600}.ok{color:#1a7f37}.failing{color:#cf222e}.pending,.disabled{color:#6e7781}
tr.problem td{background:#fff5f5}tr.problem td:first-child{box-shadow:inset 3px 0 #cf222e}
section.summary{background:#fff;border:1px solid #d8dde3;border-radius:6px;margin:1rem 0;
padding:.4rem 1rem}section.summary ul{margin:.2rem 0;padding-left:1.2rem}
section.summary h2.problem,li.problem,li.problem a{color:#cf222e}
section.summary h2.ok{color:#1a7f37}
.stale{color:#9a6700}p.none{color:#59636e;margin:.2rem 0}
.unconfigured{color:#6e7781}
dl{display:grid;grid-template-columns:max-content auto;gap:.2rem 1rem;margin:.5rem 0}
dt{color:#38424c}dd{margin:0}code{font-size:.9em}td{overflow-wrap:anywhere}
@media (max-width:36rem){.stack thead{display:none}
.stack table,.stack tbody,.stack tr,.stack td{display:block}
.stack tr{border-bottom:1px solid #d8dde3;padding:.2rem 0}
.stack td{border:0;padding:.1rem .3rem}
.stack td::before{content:attr(data-label) ": ";color:#38424c;font-weight:600}
dl{grid-template-columns:auto}}
"""


def e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _when(ts: float | None, now: float) -> str:
    if ts is None or ts <= 0:
        return '<span class="pending">never</span>'
    stamp = datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return f'<time datetime="{e(stamp)}">{e(stamp)}</time> ({e(_ago(now - ts))})'


def _ago(seconds: float) -> str:
    if seconds < 0:
        return "in the future"
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f} {unit} ago"
    return f"{seconds:.0f} s ago"


def _table(
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
class _Times:
    """What the page reads of the self-metrics once: last success and next poll per
    (account, area)."""

    successes: dict[tuple[str, str], float]
    next_polls: dict[tuple[str, str], float]


def _times(ctx: Context) -> _Times:
    return _Times(
        _by_account_area(ctx.metrics.last_success), _by_account_area(ctx.metrics.next_poll)
    )


def _next_poll(ts: float | None, now: float, failing: bool) -> str:
    """When the area is polled next; for a failing one, when it is tried again."""
    if ts is None:
        return '<span class="pending">not scheduled</span>'
    wait = max(0.0, ts - now)
    what = "next try" if failing else "next poll"
    stamp = datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return f'{what} <time datetime="{e(stamp)}">{e(_in(wait))}</time>'


def _in(seconds: float) -> str:
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"in {seconds / size:.0f} {unit}"
    return f"in {seconds:.0f} s"


def _health(
    ctx: Context,
    account: str,
    area: Area,
    now: float,
    times: _Times,
) -> list[str]:
    ok: bool | None = None
    if not area.enabled(ctx.settings):
        state, css = "disabled", "disabled"
    elif ctx.runner.not_configured(area.name, account) is not None:
        state, css = "not configured", "unconfigured"
    else:
        ok = ctx.runner.healthy(area.name, account)
        state, css = {
            True: ("OK", "ok"),
            False: ("failing", "failing"),
            None: ("waiting", "pending"),
        }[ok]
    last = times.successes.get((account, area.name))
    upcoming = times.next_polls.get((account, area.name))
    return [
        e(area.title),
        f'<span class="health {css}" data-state="{css}">{e(state)}</span>',
        _when(last, now),
        _next_poll(upcoming, now, ok is False) if area.enabled(ctx.settings) else "",
    ]


def _unexported(names: tuple[str, ...]) -> str | None:
    """A note in place of a figure whose families ``metrics.include``/``exclude`` leave out: a
    family that is never built must not read as "all good"."""
    if not names:
        return None
    return (
        f'<span class="pending unexported">not exported ({e(", ".join(names))} left out by '
        "metrics.include/exclude)</span>"
    )


def _stale(stale: bool) -> str:
    return ' <span class="stale">(stale)</span>' if stale else ""


def _account_section(
    ctx: Context,
    areas: Areas,
    account: str,
    index: int,
    s: AccountSummary,
    now: float,
    times: _Times,
) -> str:
    clean = secret_mask(ctx.settings).text
    traffic_area = areas.traffic
    charts = account_charts(
        traffic_area.history.points(account), traffic_area.enabled(ctx.settings)
    )
    listed = list(areas)
    health = _table(
        ("Area", "Health", "Last success", "Next poll"),
        [_health(ctx, account, area, now, times) for area in listed],
        "areas",
        anchor(index, "areas"),
        lambda i: ctx.runner.healthy(listed[i].name, account) is False,
    )
    t = s.of(TrafficSummary)
    window = (
        f"ends {_when(t.window_end, now)}"
        if t.window_end
        else '<span class="pending">none yet</span>'
    ) + _stale(t.stale)
    window = _unexported(t.window_left_out) or window
    lateness = _unexported(t.late_left_out) or _lateness(t.late_shares)
    audited = _audit(t.audit, now)
    th = s.of(TalkingHeadSummary)
    quota = (
        '<span class="pending">unknown</span>'
        if th.quota_left is None
        else f"{e(f'{th.quota_left:g}')}"
        + (f" of {e(f'{th.quota_limit:g}')}" if th.quota_limit is not None else "")
    ) + _stale(th.stale)
    quota = _unexported(th.quota_left_out) or quota
    task_text = ", ".join(f"{e(status)}: {n:g}" for status, n in th.tasks) or "none"
    task_text = _unexported(th.tasks_left_out) or task_text

    r = s.of(RestreamSummary)
    failing = [_target_row(t, clean) for t in r.failing]
    stopped = [[*_target_row(t, clean), e(", ".join(t.stopped_because))] for t in r.stopped]
    restream_html = (
        _table(
            ("Resource", "Source", "Target", "Code", "Description"),
            failing,
            "restream",
            anchor(index, "restream"),
            lambda i: True,
        )
        if failing
        else _none(
            r.known,
            not r.stale and ctx.runner.healthy("restream", account) is not False,
            times.successes.get((account, "restream")),
            now,
            (
                "No active, scheduled target failing." if stopped else "All restream targets OK.",
                "No restream status yet.",
            ),
        )
    )
    if stopped:
        restream_html += "<h3>Restream targets stopped on purpose</h3>" + _table(
            ("Resource", "Source", "Target", "Code", "Description", "Why"),
            stopped,
            "restream-stopped",
        )
    restream_gone = _unexported(r.left_out)
    restream_html = f'<p class="none">{restream_gone}</p>' if restream_gone else restream_html
    d = s.of(DvrSummary)
    dead = [[e(clean(stream)), e(clean(host))] for stream, host in d.dead]
    dvr_unconfigured = ctx.runner.not_configured(areas.dvr.name, account)
    dvr_html = (
        _table(("Stream", "Node"), dead, "dvr", anchor(index, "dvr"), lambda i: True)
        if dead
        else _none(
            d.known,
            not d.stale and ctx.runner.healthy("dvr", account) is not False,
            times.successes.get((account, "dvr")),
            now,
            ("All DVR nodes alive.", "No DVR status yet."),
        )
    )
    if dvr_unconfigured is not None:
        dvr_html = (
            f'<p class="none unconfigured">Not configured: {_config_text(dvr_unconfigured)}</p>'
        )
    dvr_gone = _unexported(d.left_out)
    dvr_html = f'<p class="none">{dvr_gone}</p>' if dvr_gone else dvr_html
    top_gone = _unexported(t.top_left_out)
    top = f'<p class="none">{top_gone}</p>' if top_gone else top_resources(t.top, clean)
    return (
        f'<section class="account" id="{anchor(index)}" data-account="{e(account)}">'
        f"<h2>{e(account)}</h2>{health}"
        f'<dl><dt>Last complete traffic window</dt><dd class="window">{window}</dd>'
        f'<dt>Late traffic (settle reads)</dt><dd class="lateness">{lateness}</dd>'
        f'<dt>Audit against the platform</dt><dd class="audit">{audited}</dd>'
        f'<dt>Talking-head quota left</dt><dd class="quota">{quota}</dd>'
        f'<dt>Admin-submitted videos</dt><dd class="tasks">{task_text}</dd></dl>'
        f"<h3>Traffic, last hour</h3>"
        f"{charts}"
        f"<h3>Top {TOP_RESOURCES} resources by edge traffic (latest window)</h3>"
        f"{top}"
        f"<h3>Restream targets failing</h3>{restream_html}"
        f"<h3>Dead DVR nodes</h3>{dvr_html}</section>"
    )


def _config_text(what: str) -> str:
    """``what`` HTML-escaped, with its `config keys` as code."""
    parts = e(what).split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


def _lateness(shares: tuple[tuple[int, float], ...]) -> str:
    """The account's lateness profile in one line: what each settle read added to the latest
    run it settled ("+0.8% after 5 min, +0.1% after 15 min, 0 after 60 min")."""
    if not shares:
        return '<span class="pending">not measured yet</span>'
    parts = [
        f"{'0' if v == 0 else f'+{v * 100:.2g}%'} after {minutes} min" for minutes, v in shares
    ]
    return e(", ".join(parts))


def _audit(a: AuditSummary | None, now: float) -> str:
    """The standing audit in one line: "audited 65 minutes 3 h ago: equal" (the latest audit),
    or what differs, and how many of the minutes audited so far were equal."""
    if a is None or a.last_at is None:
        return '<span class="pending">no audit yet (the first comes about 2 h after start)</span>'
    total = a.equal_minutes + a.differing_minutes
    verdict = (
        "equal"
        if not a.differences
        else "differs: " + ", ".join(f"{key} {v:+g}" for key, v in a.differences)
    )
    return (
        f"latest {_when(a.last_at, now)}: {e(verdict)}; "
        f"{a.equal_minutes:g} of {total:g} audited minutes equal"
    )


def _target_row(t: TargetState, clean: Callable[[str], str]) -> list[str]:
    return [
        f"<code>{e(clean(t.resource_id))}</code>",
        e(clean(t.source)),
        e(clean(t.target)),
        f"{t.code:g}",
        e(clean(t.description)),
    ]


def _none(
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
    ago = "never" if not last_ok else _ago(now - last_ok)
    return f'<p class="none stale" data-state="stale">Last seen healthy {e(ago)}.</p>'


def render_landing(ctx: Context, areas: Areas, metrics_path: str = "/metrics") -> str:
    """The whole page as text (pure: reads the context, changes nothing)."""
    now = ctx.clock.time()
    admin = ctx.settings.admin.enabled
    links = [
        f'<a href="{e(metrics_path)}">Metrics</a>',
        '<a href="/healthz">Health</a>',
        '<a href="/readyz">Readiness</a>',
        '<a href="/api/v1/openapi.json">Admin API (OpenAPI)</a>'
        if admin
        else '<span class="disabled">Admin API off (admin.enabled)</span>',
        f'<span class="docs">{e(DOCS_NOTE)}</span>',
    ]
    started = _when(ctx.started_at, now) if ctx.started_at else "unknown"
    times = _times(ctx)
    summaries = [account_summary(ctx.store, a) for a in ctx.accounts]
    sections = "".join(
        _account_section(ctx, areas, a, i, s, now, times)
        for i, (a, s) in enumerate(zip(ctx.accounts, summaries, strict=True))
    ) or ('<p class="none">No accounts yet: discovery pending, or none for this shard.</p>')
    wrong = summary_html(
        [
            problems(ctx, areas, a, i, s)
            for i, (a, s) in enumerate(zip(ctx.accounts, summaries, strict=True))
        ]
    )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta http-equiv="refresh" content="{REFRESH_SECONDS}">'
        f"<title>cdnvideo-exporter</title><style>{STYLE}{CHART_STYLE}</style></head><body>"
        f"<header><h1>cdnvideo-exporter</h1>"
        f'<p class="meta">version {e(__version__)} · started {started} · shard '
        f"{e(ctx.settings.shard)} · {len(ctx.accounts)} account(s)</p>"
        f"<nav>{' '.join(links)}</nav></header>"
        f"<main>{wrong}{sections}</main></body></html>"
    )


def landing_handler(
    ctx: Context, areas: Areas, metrics_path: str = "/metrics"
) -> Callable[[web.Request], Awaitable[web.Response]]:
    """The aiohttp handler for ``GET /`` (``metrics_path``: ``--web.telemetry-path``)."""

    async def landing(request: web.Request) -> web.Response:
        return web.Response(
            text=render_landing(ctx, areas, metrics_path),
            content_type="text/html",
            headers=HEADERS,
        )

    return landing
