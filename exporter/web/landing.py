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

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

from aiohttp import web

from exporter import __version__
from exporter.areakit import Area, LandingPart
from exporter.areakit.page import anchor, e, table, when
from exporter.runtime.areas import Areas
from exporter.runtime.context import Context
from exporter.runtime.registry import declarations
from exporter.runtime.summary import account_summary
from exporter.web.masking import secret_mask
from exporter.web.pagekit import AccountView, Times, read_times
from exporter.web.problems import problems, summary_html

# No public home is known to the package, so the page names where the documentation is
# instead of linking to a page that may not exist.
DOCS_NOTE = "Documentation: README.md and docs/ in the source"
REFRESH_SECONDS = 30
# Why a person's first look at /metrics shows new traffic counters at 0 (docs/windowing.md,
# Resources): Prometheus' increase() counts a series' first minutes only from a 0 it scraped.
COUNTERS_NOTE = (
    "A new traffic counter reads 0 until a scrape has read that 0, and its count from the next "
    "scrape on: so Prometheus' increase() and rate() count the series' first minutes too."
)

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
.unconfigured{color:#6e7781}.why{color:#59636e;font-size:.9em;overflow-wrap:anywhere}
dl{display:grid;grid-template-columns:max-content auto;gap:.2rem 1rem;margin:.5rem 0}
dt{color:#38424c}dd{margin:0}code{font-size:.9em}td{overflow-wrap:anywhere}
@media (max-width:36rem){.stack thead{display:none}
.stack table,.stack tbody,.stack tr,.stack td{display:block}
.stack tr{border-bottom:1px solid #d8dde3;padding:.2rem 0}
.stack td{border:0;padding:.1rem .3rem}
.stack td::before{content:attr(data-label) ": ";color:#38424c;font-weight:600}
dl{grid-template-columns:auto}}
"""


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
    times: Times,
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
    error = ctx.runner.last_error(area.name, account) if ok is False else None
    why = f'<br><span class="why">{e(error)}</span>' if error else ""  # masked by the runner
    return [
        e(area.title),
        f'<span class="health {css}" data-state="{css}">{e(state)}</span>{why}',
        when(last, now),
        _next_poll(upcoming, now, ok is False) if area.enabled(ctx.settings) else "",
    ]


def _account_section(view: AccountView) -> str:
    """The account's health per area, then each area's part (``AreaDeclaration.landing``),
    its facts in one list and its blocks below, in the registry's order."""
    ctx, account, index = view.ctx, view.account, view.index
    listed = list(view.areas)
    health = table(
        ("Area", "Health", "Last success", "Next poll"),
        [_health(ctx, account, area, view.now, view.times) for area in listed],
        "areas",
        anchor(index, "areas"),
        lambda i: ctx.runner.healthy(listed[i].name, account) is False,
    )
    parts = _parts()
    facts = "".join(part.facts(view) for part in parts)
    blocks = "".join(part.blocks(view) for part in parts)
    return (
        f'<section class="account" id="{anchor(index)}" data-account="{e(account)}">'
        f"<h2>{e(account)}</h2>{health}<dl>{facts}</dl>{blocks}</section>"
    )


def _parts() -> tuple[LandingPart, ...]:
    """The part of each area of the registry that declares one, in the registry's order."""
    return tuple(d.landing for d in declarations() if d.landing is not None)


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
    started = when(ctx.started_at, now) if ctx.started_at else "unknown"
    times = read_times(ctx)
    clean = secret_mask(ctx.settings).text
    views = [
        AccountView(ctx, areas, a, i, account_summary(ctx.store, a), now, times, clean)
        for i, a in enumerate(ctx.accounts)
    ]
    sections = "".join(_account_section(view) for view in views) or (
        '<p class="none">No accounts yet: discovery pending, or none for this shard.</p>'
    )
    parts = _parts()
    wrong = summary_html([problems(view, parts) for view in views])
    style = STYLE + "".join(part.style for part in parts)
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta http-equiv="refresh" content="{REFRESH_SECONDS}">'
        f"<title>cdnvideo-exporter</title><style>{style}</style></head><body>"
        f"<header><h1>cdnvideo-exporter</h1>"
        f'<p class="meta">version {e(__version__)} · started {started} · shard '
        f"{e(ctx.settings.shard)} · {len(ctx.accounts)} account(s)</p>"
        f"<nav>{' '.join(links)}</nav>"
        f'<p class="meta counters">{e(COUNTERS_NOTE)}</p></header>'
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
