"""The traffic area on the landing page: the last complete window, late traffic, the audit,
the last hour's charts and the top resources."""

from __future__ import annotations

from exporter.areakit.page import AccountView, LandingPart, e, stale, unexported, when
from exporter.traffic.area import TrafficArea
from exporter.traffic.charts import STYLE, account_charts, top_resources
from exporter.traffic.summary import TOP_RESOURCES, AuditSummary, TrafficSummary


def facts(view: AccountView) -> str:
    t, now = view.summary.of(TrafficSummary), view.now
    window = (
        f"ends {when(t.window_end, now)}"
        if t.window_end
        else '<span class="pending">none yet</span>'
    ) + stale(t.stale)
    window = unexported(t.window_left_out) or window
    lateness = unexported(t.late_left_out) or _lateness(t.late_shares)
    audited = _audit(t.audit, now)
    return (
        f'<dt>Last complete traffic window</dt><dd class="window">{window}</dd>'
        f'<dt>Late traffic (settle reads)</dt><dd class="lateness">{lateness}</dd>'
        f'<dt>Audit against the platform</dt><dd class="audit">{audited}</dd>'
    )


def blocks(view: AccountView) -> str:
    t = view.summary.of(TrafficSummary)
    traffic_area = view.area(TrafficArea)
    charts = account_charts(
        traffic_area.history.points(view.account), traffic_area.enabled(view.settings)
    )
    top_gone = unexported(t.top_left_out)
    top = f'<p class="none">{top_gone}</p>' if top_gone else top_resources(t.top, view.clean)
    return (
        f"<h3>Traffic, last hour</h3>"
        f"{charts}"
        f"<h3>Top {TOP_RESOURCES} resources by edge traffic (latest window)</h3>"
        f"{top}"
    )


PART = LandingPart(facts=facts, blocks=blocks, style=STYLE)


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
        f"latest {when(a.last_at, now)}: {e(verdict)}; "
        f"{a.equal_minutes:g} of {total:g} audited minutes equal"
    )
