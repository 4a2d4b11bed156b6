"""Server-rendered SVG for the landing page: an account's last hour and its top resources.

No script and no external resource: each chart is inline SVG built from numbers the exporter
already holds (``TrafficHistory`` points, the latest traffic fragment), so the page's
``default-src 'none'`` policy stays as it is. Every label is escaped.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from datetime import UTC, datetime

from exporter.traffic.history import HOUR_SECONDS, Point
from exporter.traffic.summary import TopResource

WIDTH, HEIGHT = 320.0, 90.0
TOP, BOTTOM = 14.0, 84.0  # plot area, leaving room for the max label
GAP_SECONDS = 180.0  # a line breaks where windows are missing (outage, restart)

STYLE = """
.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(15rem,1fr));gap:.6rem 1rem;
margin:.3rem 0}
figure.chart{margin:0;min-width:0}
figure.chart figcaption{display:flex;justify-content:space-between;gap:.5rem;color:#38424c}
figure.chart figcaption b{color:#1d232a}
svg.chart{display:block;width:100%;height:auto;background:#fafbfc;border:1px solid #eceff2;
border-radius:4px}.axis{display:flex;justify-content:space-between;color:#6e7781;font-size:.8rem}
svg.bar{display:block;width:100%;min-width:3rem;height:.7rem}
table.top td.name{overflow-wrap:anywhere}table.top td.num{white-space:nowrap;text-align:right}
@media (max-width:30rem){section.account{padding:.5rem .6rem}th,td{padding:.25rem .3rem}}
"""

COLOURS = {"requests": "#0969da", "bandwidth": "#8250df", "hit_ratio": "#1a7f37"}


def e(value: object) -> str:
    return html.escape(str(value), quote=True)


def rate(value: float) -> str:
    for unit, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= size:
            return f"{value / size:.3g}{unit}/s"
    return f"{value:.3g}/s"


def byte_rate(value: float) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(value) >= size:
            return f"{value / size:.3g} {unit}/s"
    return f"{value:.3g} B/s"


def percent(value: float) -> str:
    return f"{value * 100:.1f} %"


def _segments(
    points: tuple[Point, ...], pick: Callable[[Point], float | None]
) -> list[list[tuple[float, float]]]:
    """(time, value) runs without a missing value or a gap longer than GAP_SECONDS."""
    runs: list[list[tuple[float, float]]] = []
    last_end: float | None = None
    for p in points:
        v = pick(p)
        if v is None:
            last_end = None
            continue
        if last_end is None or p.end - last_end > GAP_SECONDS:
            runs.append([])
        runs[-1].append((p.end, v))
        last_end = p.end
    return runs


def chart(
    name: str,
    title: str,
    points: tuple[Point, ...],
    pick: Callable[[Point], float | None],
    fmt: Callable[[float], str],
    ceiling: float | None = None,
) -> str:
    """One figure: caption with the latest value, the line of the last hour, the time axis."""
    runs = _segments(points, pick)
    values = [v for run in runs for _, v in run]
    end = points[-1].end
    start = end - HOUR_SECONDS
    top = ceiling if ceiling is not None else max(values, default=0.0) * 1.1
    top = top if top > 0 else 1.0
    colour = COLOURS[name]

    def xy(t: float, v: float) -> str:
        x = (t - start) / HOUR_SECONDS * WIDTH
        y = BOTTOM - min(v, top) / top * (BOTTOM - TOP)
        return f"{x:.1f},{y:.1f}"

    shapes = []
    for run in runs:
        coords = " ".join(xy(t, v) for t, v in run)
        if len(run) == 1:
            x, y = coords.split(",")
            shapes.append(f'<circle cx="{x}" cy="{y}" r="2.5" fill="{colour}"/>')
            continue
        first_x = xy(run[0][0], 0).split(",")[0]
        last_x = xy(run[-1][0], 0).split(",")[0]
        shapes.append(
            f'<polygon points="{first_x},{BOTTOM} {coords} {last_x},{BOTTOM}" '
            f'fill="{colour}" fill-opacity="0.12"/>'
            f'<polyline points="{coords}" fill="none" stroke="{colour}" stroke-width="2" '
            'stroke-linejoin="round" stroke-linecap="round"/>'
        )
    latest = pick(points[-1])
    shown = fmt(latest) if latest is not None else "n/a"
    label = f"{title}, last hour: latest {shown}, highest {fmt(max(values, default=0.0))}"
    grid = "".join(
        f'<line x1="0" x2="{WIDTH:g}" y1="{y:g}" y2="{y:g}" stroke="#d8dde3" stroke-width="0.5"/>'
        for y in (TOP, (TOP + BOTTOM) / 2, BOTTOM)
    )
    clock = datetime.fromtimestamp(end, UTC).strftime("%H:%M UTC")
    return (
        f'<figure class="chart" data-chart="{name}">'
        f"<figcaption><span>{e(title)}</span><b>{e(shown)}</b></figcaption>"
        f'<svg class="chart" viewBox="0 0 {WIDTH:g} {HEIGHT:g}" role="img" '
        f'aria-label="{e(label)}" data-points="{len(values)}">'
        f"<title>{e(label)}</title>{grid}"
        f'<text x="2" y="10" font-size="9" fill="#6e7781">{e(fmt(top))}</text>'
        f"{''.join(shapes)}</svg>"
        f'<div class="axis"><span>−60 min</span><span>{e(clock)}</span></div></figure>'
    )


def account_charts(points: tuple[Point, ...], traffic_enabled: bool) -> str:
    """The three charts of an account's last hour, or a sentence saying why there are none."""
    if not traffic_enabled:
        return '<p class="none charts-none">Traffic is not polled (traffic.enabled is false).</p>'
    if not points:
        return (
            '<p class="none charts-none">No traffic data yet: the first minute is read '
            "traffic.delay_seconds after it closes.</p>"
        )
    return (
        '<div class="charts">'
        + chart("requests", "Edge requests", points, lambda p: p.requests_per_second, rate)
        + chart("bandwidth", "Edge bandwidth", points, lambda p: p.bytes_per_second, byte_rate)
        + chart("hit_ratio", "Edge hit ratio", points, lambda p: p.hit_ratio, percent, 1.0)
        + "</div>"
    )


def _or_na(value: float | None, fmt: Callable[[float], str]) -> str:
    return "n/a" if value is None else e(fmt(value))


def top_resources(top: Sequence[TopResource], clean: Callable[[str], str]) -> str:
    """The resources with the most edge bandwidth in the latest window, with bars."""
    if not top:
        return '<p class="none">No per-resource figures yet.</p>'
    most = max(top[0].bandwidth, 1e-9)
    rows = []
    for r in top:
        resource, name, cname, bandwidth = r.resource, r.name, r.cname, r.bandwidth
        width = max(bandwidth / most * 100, 0.5 if bandwidth > 0 else 0)
        rows.append(
            f'<tr data-resource="{e(clean(resource))}">'
            f'<td class="name">{e(clean(name))}'
            + (f"<br><code>{e(clean(cname))}</code>" if cname else "")
            + "</td>"
            f'<td><svg class="bar" viewBox="0 0 100 8" preserveAspectRatio="none" role="img" '
            f'aria-label="{e(byte_rate(bandwidth))}"><rect width="{width:.1f}" height="8" '
            f'fill="{COLOURS["bandwidth"]}"/></svg>{e(byte_rate(bandwidth))}</td>'
            f'<td class="num">{_or_na(r.requests_per_second, rate)}</td>'
            f'<td class="num">{_or_na(r.hit_ratio, percent)}</td>'
            "</tr>"
        )
    return (
        '<table class="top"><thead><tr><th>Resource</th><th>Edge bandwidth</th>'
        "<th>Requests</th><th>Hit ratio</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )
