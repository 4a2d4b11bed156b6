"""``/``: a plain server-rendered page for people: health per account and area, and links.

It reads only what the pollers already published (the Store's fragments, found by metric name,
and the self-metrics), so opening it never sends a request upstream. Every shown value is
HTML-escaped; label values are redacted again on the way out.
"""

from __future__ import annotations

import html
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from aiohttp import web

from exporter import __version__
from exporter.exposition import Fragment, StoreKey
from exporter.runtime.area import Area
from exporter.runtime.areas import Areas
from exporter.runtime.context import Context
from exporter.web.charts import STYLE as CHART_STYLE
from exporter.web.charts import TOP_RESOURCES, account_charts, top_resources
from exporter.web.fragments import rows_named, value_named

DEFAULT_DOCS_URL = "https://pypi.org/project/cdnvideo-exporter/"
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
.stale{color:#9a6700}p.none{color:#59636e;margin:.2rem 0}
dl{display:grid;grid-template-columns:max-content auto;gap:.2rem 1rem;margin:.5rem 0}
dt{color:#38424c}dd{margin:0}code{font-size:.9em}td{overflow-wrap:anywhere}
"""


def e(value: object) -> str:
    return html.escape(str(value), quote=True)


@dataclass(frozen=True)
class _Read:
    """A fragment as the page sees it: the latest one, and whether it is past its max age."""

    fragment: Fragment | None
    stale: bool


def _read(ctx: Context, key: StoreKey) -> _Read:
    fresh = ctx.store.fragment(key)
    if fresh is not None:
        return _Read(fresh, False)
    old = ctx.store.fragment(key, include_stale=True)
    return _Read(old, old is not None)


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


def _table(headers: Iterable[str], rows: list[list[str]], css: str) -> str:
    head = "".join(f"<th>{e(h)}</th>" for h in headers)
    shown = rows[:MAX_ROWS]
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in shown)
    more = (
        f'<p class="none">and {len(rows) - MAX_ROWS} more (see /metrics)</p>'
        if len(rows) > MAX_ROWS
        else ""
    )
    return f'<table class="{css}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{more}'


def _last_successes(ctx: Context) -> dict[tuple[str, str], float]:
    """(account, area) -> last success time, read once per page (not once per row)."""
    out: dict[tuple[str, str], float] = {}
    for family in ctx.metrics.last_success.collect():
        for sample in family.samples:
            out[(sample.labels.get("account", ""), sample.labels.get("area", ""))] = sample.value
    return out


def _health(
    ctx: Context,
    account: str,
    area: Area,
    now: float,
    successes: dict[tuple[str, str], float],
) -> list[str]:
    if not area.enabled(ctx.settings):
        state, css = "disabled", "disabled"
    else:
        ok = ctx.runner.healthy(area.name, account)
        state, css = {
            True: ("OK", "ok"),
            False: ("failing", "failing"),
            None: ("waiting", "pending"),
        }[ok]
    last = successes.get((account, area.name))
    return [
        e(area.title),
        f'<span class="health {css}" data-state="{css}">{e(state)}</span>',
        _when(last, now),
    ]


def _unexported(ctx: Context, *names: str) -> str | None:
    """A note in place of a figure whose families ``metrics.include``/``exclude`` leave out:
    the page reads the published fragments, and a family that is never built must not read as
    "all good"."""
    gone = [name for name in names if not ctx.store.selection.wants(name)]
    if not gone:
        return None
    return (
        f'<span class="pending unexported">not exported ({e(", ".join(gone))} left out by '
        "metrics.include/exclude)</span>"
    )


def _account_section(
    ctx: Context,
    areas: Areas,
    account: str,
    now: float,
    successes: dict[tuple[str, str], float],
) -> str:
    clean = ctx.redactor.text
    traffic_area = areas.traffic
    charts = account_charts(
        traffic_area.history.points(account), traffic_area.enabled(ctx.settings)
    )
    health = _table(
        ("Area", "Health", "Last success"),
        [_health(ctx, account, area, now, successes) for area in areas],
        "areas",
    )
    traffic = _read(ctx, StoreKey("traffic", account))
    window_end = value_named(
        traffic.fragment, "cdnvideo_account_window_end_timestamp_seconds", account=account
    )
    window = (
        f"ends {_when(window_end, now)}" if window_end else '<span class="pending">none yet</span>'
    ) + (' <span class="stale">(stale)</span>' if traffic.stale else "")
    window = _unexported(ctx, "cdnvideo_account_window_end_timestamp_seconds") or window
    lateness = _unexported(ctx, "cdnvideo_traffic_late_share") or _lateness(traffic.fragment)
    th = _read(ctx, StoreKey("talking_head", account))
    left = value_named(th.fragment, "cdnvideo_talking_head_quota_left", account=account)
    limit = value_named(th.fragment, "cdnvideo_talking_head_quota_limit", account=account)
    quota = (
        '<span class="pending">unknown</span>'
        if left is None
        else f"{e(f'{left:g}')}" + (f" of {e(f'{limit:g}')}" if limit is not None else "")
    ) + (' <span class="stale">(stale)</span>' if th.stale else "")
    quota = _unexported(ctx, "cdnvideo_talking_head_quota_left") or quota
    tasks = rows_named(
        _read(ctx, StoreKey("talking_head_tasks", account)).fragment, "cdnvideo_talking_head_tasks"
    )
    task_text = ", ".join(f"{e(lbl.get('status', ''))}: {v:g}" for lbl, v in tasks if v) or "none"
    task_text = _unexported(ctx, "cdnvideo_talking_head_tasks") or task_text

    restream = _read(ctx, StoreKey("restream", account))
    failing, stopped = _restream_not_ok(restream.fragment, clean)
    restream_html = (
        _table(("Resource", "Source", "Target", "Code", "Description"), failing, "restream")
        if failing
        else _none(
            restream,
            "No active, scheduled target failing." if stopped else "All restream targets OK.",
            "No restream status yet.",
        )
    )
    if stopped:
        restream_html += "<h3>Restream targets stopped on purpose</h3>" + _table(
            ("Resource", "Source", "Target", "Code", "Description", "Why"),
            stopped,
            "restream-stopped",
        )
    restream_gone = _unexported(ctx, *RESTREAM_READ)
    restream_html = f'<p class="none">{restream_gone}</p>' if restream_gone else restream_html
    dvr = _read(ctx, StoreKey("dvr", account))
    dead = [
        [e(clean(lbl.get("stream", ""))), e(clean(lbl.get("host", "")))]
        for lbl, alive in rows_named(dvr.fragment, "cdnvideo_dvr_alive")
        if alive == 0
    ]
    dvr_html = (
        _table(("Stream", "Node"), dead, "dvr")
        if dead
        else _none(dvr, "All DVR nodes alive.", "No DVR status yet.")
    )
    dvr_gone = _unexported(ctx, "cdnvideo_dvr_alive")
    dvr_html = f'<p class="none">{dvr_gone}</p>' if dvr_gone else dvr_html
    top_gone = _unexported(ctx, *TOP_RESOURCES_READ)
    top = f'<p class="none">{top_gone}</p>' if top_gone else top_resources(traffic.fragment, clean)
    return (
        f'<section class="account" data-account="{e(account)}">'
        f"<h2>{e(account)}</h2>{health}"
        f'<dl><dt>Last complete traffic window</dt><dd class="window">{window}</dd>'
        f'<dt>Late traffic (settle reads)</dt><dd class="lateness">{lateness}</dd>'
        f'<dt>Talking-head quota left</dt><dd class="quota">{quota}</dd>'
        f'<dt>Admin-submitted videos</dt><dd class="tasks">{task_text}</dd></dl>'
        f"<h3>Traffic, last hour</h3>"
        f"{charts}"
        f"<h3>Top {TOP_RESOURCES} resources by edge traffic (latest window)</h3>"
        f"{top}"
        f"<h3>Restream targets failing</h3>{restream_html}"
        f"<h3>Dead DVR nodes</h3>{dvr_html}</section>"
    )


RESTREAM_READ = (
    "cdnvideo_restream_status_code",
    "cdnvideo_restream_status_info",
    "cdnvideo_restream_resource_active",
    "cdnvideo_restream_scheduled",
)
TOP_RESOURCES_READ = (
    "cdnvideo_resource_bandwidth_bytes_per_second",
    "cdnvideo_resource_requests_per_second",
    "cdnvideo_resource_edge_hit_ratio",
)


def _lateness(fragment: Fragment | None) -> str:
    """The account's lateness profile in one line: what each settle read added to the latest
    run it settled ("+0.8% after 5 min, +0.1% after 15 min, 0 after 60 min")."""
    shares = sorted(
        (int(lbl["after_minutes"]), v)
        for lbl, v in rows_named(fragment, "cdnvideo_traffic_late_share")
    )
    if not shares:
        return '<span class="pending">not measured yet</span>'
    parts = [
        f"{'0' if v == 0 else f'+{v * 100:.2g}%'} after {minutes} min" for minutes, v in shares
    ]
    return e(", ".join(parts))


def _restream_not_ok(
    fragment: Fragment | None, clean: Callable[[str], str]
) -> tuple[list[list[str]], list[list[str]]]:
    """Rows of targets whose code is not 0: (failing, stopped on purpose). A target is stopped
    on purpose when its resource is inactive or it is outside its schedule, as the
    CdnvideoRestreamTargetFailing alert sees it; unknown activity or schedule counts as failing."""
    descriptions = {
        _target(lbl): lbl.get("description", "")
        for lbl, _ in rows_named(fragment, "cdnvideo_restream_status_info")
    }
    inactive = {
        lbl.get("resource_id", "")
        for lbl, v in rows_named(fragment, "cdnvideo_restream_resource_active")
        if v == 0
    }
    unscheduled = {
        _target(lbl) for lbl, v in rows_named(fragment, "cdnvideo_restream_scheduled") if v == 0
    }
    failing: list[list[str]] = []
    stopped: list[list[str]] = []
    for lbl, code in rows_named(fragment, "cdnvideo_restream_status_code"):
        if code == 0:
            continue
        ident = _target(lbl)
        row = [
            f"<code>{e(clean(lbl.get('resource_id', '')))}</code>",
            e(clean(lbl.get("source", ""))),
            e(clean(lbl.get("target", ""))),
            f"{code:g}",
            e(clean(descriptions.get(ident, ""))),
        ]
        why = [
            reason
            for reason, applies in (
                ("resource inactive", lbl.get("resource_id", "") in inactive),
                ("outside its schedule", ident in unscheduled),
            )
            if applies
        ]
        if why:
            stopped.append([*row, e(", ".join(why))])
        else:
            failing.append(row)
    return failing, stopped


def _target(labels: dict[str, str]) -> tuple[str, ...]:
    return tuple(labels.get(k, "") for k in ("resource_id", "source", "target", "target_key"))


def _none(read: _Read, all_good: str, nothing: str) -> str:
    if read.fragment is None:
        return f'<p class="none">{e(nothing)}</p>'
    stale = ' <span class="stale">(stale)</span>' if read.stale else ""
    return f'<p class="none">{e(all_good)}{stale}</p>'


def render_landing(ctx: Context, areas: Areas, docs_url: str = DEFAULT_DOCS_URL) -> str:
    """The whole page as text (pure: reads the context, changes nothing)."""
    now = ctx.clock.time()
    admin = ctx.settings.admin.enabled
    links = [
        '<a href="/metrics">Metrics</a>',
        '<a href="/healthz">Health</a>',
        '<a href="/readyz">Readiness</a>',
        '<a href="/api/v1/openapi.json">Admin API (OpenAPI)</a>'
        if admin
        else '<span class="disabled">Admin API off (admin.enabled)</span>',
        f'<a href="{e(docs_url)}">Documentation</a>',
    ]
    started = _when(ctx.started_at, now) if ctx.started_at else "unknown"
    successes = _last_successes(ctx)
    sections = "".join(_account_section(ctx, areas, a, now, successes) for a in ctx.accounts) or (
        '<p class="none">No accounts yet: discovery pending, or none for this shard.</p>'
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
        f"<main>{sections}</main></body></html>"
    )


def landing_handler(
    ctx: Context, areas: Areas, docs_url: str = DEFAULT_DOCS_URL
) -> Callable[[web.Request], Awaitable[web.Response]]:
    """The aiohttp handler for ``GET /`` (the Documentation link is the package's page)."""

    async def landing(request: web.Request) -> web.Response:
        return web.Response(
            text=render_landing(ctx, areas, docs_url), content_type="text/html", headers=HEADERS
        )

    return landing
