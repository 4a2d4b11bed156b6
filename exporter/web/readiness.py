"""What ``/readyz`` answers: per account and area whether it is ready and why not, and the
verdict: ready once every area with something to watch has succeeded for every account the
platform knows, and the traffic state file holds what is published."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import structlog

from exporter.areakit import Area
from exporter.runtime.areas import Areas
from exporter.runtime.context import Context
from exporter.traffic.settings import TRAFFIC_SECTION

log = structlog.get_logger("exporter.web.readiness")

WAITING = "waiting for its first poll"
NEVER = "never succeeded since the start"


@dataclass(frozen=True)
class Part:
    """One area of one account (or the state file): ready, or why not. ``holds`` says whether
    it holds the verdict back (an area with nothing to watch does not: no poll would change
    that, only the config)."""

    ready: bool
    reason: str = ""
    holds: bool = True
    last_error: str | None = None  # why its latest poll failed, secrets masked

    def json(self) -> dict[str, Any]:
        out: dict[str, Any] = (
            {"ready": True} if self.ready else {"ready": False, "reason": self.reason}
        )
        if self.last_error is not None:
            out["last_error"] = self.last_error
        return out


def area_part(ctx: Context, area: Area, account: str) -> Part:
    """Whether ``area`` is ready for ``account``: configured, polled, and succeeded once (a
    poll failing after that is the alerts' business, not a reason to stop serving). A
    failing area carries its last error, which a reason that it never succeeded names."""
    what = ctx.runner.not_configured(area.name, account)
    if what is not None:
        return Part(False, f"not configured: {what}", holds=False)
    if ctx.runner.healthy(area.name, account) is None:
        return Part(False, WAITING)
    error = ctx.runner.last_error(area.name, account)
    if not ctx.runner.succeeded_once(area.name, account):
        return Part(False, f"{NEVER}; last error: {error}" if error else NEVER, last_error=error)
    return Part(True, last_error=error)


def state_part(ctx: Context, areas: Areas) -> Part | None:
    """The traffic state file: written, and no counters held back (None: none configured)."""
    path = TRAFFIC_SECTION.of(ctx.settings).state_file
    if not path or not areas.traffic.enabled(ctx.settings):
        return None
    file = areas.traffic.poller.publisher.file
    if file.held_back:
        return Part(False, "traffic counters held back: the last save of the state file failed")
    if not file.on_disk:
        return Part(False, "the traffic state file has not been written yet")
    return Part(True)


def readiness(ctx: Context, areas: Areas) -> tuple[bool, dict[str, Any]]:
    """The verdict and its detail. An account the platform says it does not know (a 404
    about the account, or "no access" while it accepts our token) is named in
    ``unknown_accounts`` and left out of the verdict; for every other account each enabled
    area is listed under ``areas`` with ``ready`` and, when not, its ``reason``. Ready (200)
    while at least one account is known, every area of those that has something to watch
    succeeded once, and the state file (when configured) is written and nothing held back."""
    unknown: dict[str, str] = {}
    parts: dict[str, dict[str, Part]] = {}
    for account in ctx.accounts:
        why = ctx.runner.unknown(account)
        if why is not None:
            unknown[account] = why
            continue
        parts[account] = {a.name: area_part(ctx, a, account) for a in areas.enabled()}
    state = state_part(ctx, areas)
    holding = [
        f"{area}/{account}: {p.reason}"
        for account, by_area in parts.items()
        for area, p in by_area.items()
        if not p.ready and p.holds
    ]
    if state is not None and not state.ready:
        holding.append(state.reason)
    ready = bool(parts) and not holding
    detail: dict[str, Any] = {
        "ready": ready,
        "accounts": list(ctx.accounts),
        "ready_accounts": [
            a for a, by in parts.items() if all(p.ready or not p.holds for p in by.values())
        ],
        "unknown_accounts": unknown,
        "pending_first_poll": [
            f"{area}/{account}"
            for account, by_area in parts.items()
            for area, p in by_area.items()
            if p.reason == WAITING
        ],
        "areas": {
            account: {area: p.json() for area, p in by_area.items()}
            for account, by_area in parts.items()
        },
    }
    if state is not None:
        detail["state_file"] = state.json()
    if not ctx.accounts:
        detail["reason"] = "no accounts yet (discovery pending or none configured for this shard)"
    elif not parts:
        detail["reason"] = f"the platform knows none of the accounts: {', '.join(unknown)}"
    elif holding:
        more = f" (and {len(holding) - 1} more)" if len(holding) > 1 else ""
        detail["reason"] = holding[0] + more
    return ready, detail


class ReadinessLog:
    """One ``readiness_changed`` line each time the verdict or a reason changes."""

    def __init__(self) -> None:
        self._last: tuple[bool, tuple[str, ...]] | None = None

    def observe(self, ready: bool, detail: dict[str, Any]) -> None:
        reasons = tuple(
            f"{area}/{account}: {p['reason']}"
            for account, by_area in detail.get("areas", {}).items()
            for area, p in by_area.items()
            if not p["ready"]
        )
        state = detail.get("state_file")
        if state is not None and not state["ready"]:
            reasons += (state["reason"],)
        reasons += tuple(f"{a}: unknown to the platform" for a in detail["unknown_accounts"])
        if (ready, reasons) == self._last:
            return
        self._last = (ready, reasons)
        log.info("readiness_changed", ready=ready, not_ready=list(reasons))
