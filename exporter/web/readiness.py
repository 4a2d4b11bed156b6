"""What ``/readyz`` answers: ready while at least one account the platform knows has been
polled by every area and one of those polls succeeded."""

from __future__ import annotations

from typing import Any

from exporter.runtime.areas import Areas
from exporter.runtime.context import Context


def readiness(ctx: Context, areas: Areas) -> tuple[bool, dict[str, Any]]:
    """The verdict and its detail. An account the platform says it does not know (a 404
    about the account, or "no access" while it accepts our token) is not ready and is named
    in ``unknown_accounts``; the others are ready once every enabled area polled them and a
    poll that asks the platform (not DVR without streams) succeeded. Ready (200) while one
    account is, and no known account still waits for its first poll."""
    pending: list[str] = []
    ready_accounts: list[str] = []
    unknown: dict[str, str] = {}
    for account in ctx.accounts:
        why = ctx.runner.unknown(account)
        if why is not None:
            unknown[account] = why
            continue
        healthy = False
        for area in areas.enabled():
            state = ctx.runner.healthy(area.name, account)
            if state is None:
                pending.append(f"{area.name}/{account}")
            elif state and area.asks_platform(account):
                healthy = True
        if healthy:
            ready_accounts.append(account)
    ready = bool(ready_accounts) and not pending
    detail: dict[str, Any] = {
        "ready": ready,
        "accounts": list(ctx.accounts),
        "ready_accounts": ready_accounts,
        "unknown_accounts": unknown,
        "pending_first_poll": pending,
    }
    if not ctx.accounts:
        detail["reason"] = "no accounts yet (discovery pending or none configured for this shard)"
    elif pending:
        detail["reason"] = "first poll not done everywhere"
    elif not ready_accounts and len(unknown) == len(ctx.accounts):
        detail["reason"] = f"the platform knows none of the accounts: {', '.join(unknown)}"
    elif not ready_accounts:
        detail["reason"] = "upstream not reachable: no poll that asks the platform has succeeded"
    return ready, detail
