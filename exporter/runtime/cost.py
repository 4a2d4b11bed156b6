"""Upstream requests a minute by area for a config: what check-config prints.

The figures are the steady state of the schedule the config sets; how each area's count was
derived, and the simulator's: docs/performance.md#upstream-requests-per-minute-by-area. Each
area states its own (``cost`` of its declaration, ``exporter/<area>/declaration.py``):

- traffic: first reads (1 or 2 requests a minute) plus the settle reads of the schedule
  (``traffic.settings.requests_per_minute``), per account;
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

from exporter.areakit import AreaCost
from exporter.config.settings import Settings
from exporter.runtime.registry import declarations


def request_cost(settings: Settings) -> list[AreaCost]:
    """Requests a minute by enabled area, for every configured account together (for one
    account when accounts come from discovery)."""
    costs = (area.cost(settings) for area in declarations())
    return [c for c in costs if c is not None]


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
