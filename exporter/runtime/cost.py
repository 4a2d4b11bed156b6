"""Upstream requests a minute by area for a config: what check-config prints.

The figures are the steady state of the schedule the config sets (docs/performance.md has them
measured against the simulator, and how each area's count was derived):

- traffic: first reads (1 or 2 requests a minute) plus the settle reads of the schedule
  (``report.traffic_requests_per_minute``), per account;
- restream: ``/resources`` and ``/status`` every ``interval_seconds``; every
  ``history_interval_seconds`` one ``/history`` per resource read: those whose status changed,
  and a round-robin share so each is read once in ``HISTORY_ROUND_ROBIN_POLLS`` polls. The
  number of restream resources is the platform's, so history is given per resource (and a
  status change costs one request more);
- dvr: one request per configured stream every ``interval_seconds`` (spread over the interval
  when a request budget is set);
- talking_head: one quota request every ``interval_seconds``.

Accounts found by discovery are not known before the exporter runs: the figures are then per
account.
"""

from __future__ import annotations

from dataclasses import dataclass

from exporter.config.report import traffic_requests_per_minute
from exporter.config.settings import Settings
from exporter.restream.poller import HISTORY_ROUND_ROBIN_POLLS


@dataclass(frozen=True)
class AreaCost:
    """One area's requests a minute: ``fixed`` for the accounts at hand, plus ``per_resource``
    for each restream resource (restream only; 0 elsewhere). A restream status change costs
    one more request, at the next history poll."""

    area: str
    fixed: float
    per_resource: float = 0.0
    how: str = ""


def request_cost(settings: Settings) -> list[AreaCost]:
    """Requests a minute by enabled area, for every configured account together (for one
    account when accounts come from discovery)."""
    accounts = settings.accounts or ()
    n = max(1, len(accounts))
    out: list[AreaCost] = []
    t = settings.traffic
    if t.enabled:
        per = traffic_requests_per_minute(settings)
        out.append(AreaCost("traffic", per * n, how=f"{per:.2f} per account"))
    r = settings.restream
    if r.enabled:
        status = 2 * 60 / r.interval_seconds
        history = 60 / r.history_interval_seconds
        out.append(
            AreaCost(
                "restream",
                status * n,
                per_resource=history / HISTORY_ROUND_ROBIN_POLLS,
                how=f"status {status:.2f} per account; each resource's history once in "
                f"{HISTORY_ROUND_ROBIN_POLLS} polls of {r.history_interval_seconds:g} s, and "
                "one request per status change",
            )
        )
    d = settings.dvr
    if d.enabled:
        streams = sum(len(a.dvr_streams) for a in accounts)
        out.append(
            AreaCost(
                "dvr",
                streams * 60 / d.interval_seconds / d.poll_slices,
                how=f"{streams} stream(s) every {d.interval_seconds * d.poll_slices:g} s"
                + (f" ({d.poll_slices} slices)" if d.poll_slices > 1 else ""),
            )
        )
    h = settings.talking_head
    if h.enabled:
        out.append(
            AreaCost(
                "talking_head",
                60 / h.interval_seconds * n,
                how=f"every {h.interval_seconds:g} s per account",
            )
        )
    return out


def cost_lines(settings: Settings) -> list[str]:
    """The cost as check-config prints it: one line per area and the total."""
    cost = request_cost(settings)
    scope = (
        f"{len(settings.accounts)} account(s)"
        if settings.accounts
        else "one account (accounts come from discovery)"
    )
    lines = [f"upstream requests a minute for {scope}, by area (docs/performance.md):"]
    for c in cost:
        extra = f" + {c.per_resource:.3f} per restream resource" if c.per_resource else ""
        lines.append(f"  {c.area:<13}{c.fixed:8.2f}{extra}  ({c.how})")
    total = sum(c.fixed for c in cost)
    per_resource = sum(c.per_resource for c in cost)
    tail = f" + {per_resource:.3f} per restream resource" if per_resource else ""
    lines.append(f"  {'total':<13}{total:8.2f}{tail}")
    return lines
