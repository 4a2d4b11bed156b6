"""What a polled area is to the daemon: a name, a switch, typed jobs per account, forgetting."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from exporter.config import Settings


@dataclass(frozen=True)
class Job:
    """One poll of one account, run every ``seconds`` through the PollRunner.

    ``name`` tells apart the jobs of one area (restream's ``history``); the area's own job has
    none. ``cdnvideo_up`` of the area is 1 while all its jobs of the account succeed.
    """

    area: str
    account: str
    seconds: float
    poll: Callable[[], Awaitable[None]]
    name: str = ""


class Area(Protocol):
    """One polled part of the platform (traffic, restream, DVR, talking head).

    The Service loops over the registry (``exporter.runtime.areas.REGISTRY``): it schedules
    ``jobs(account)`` of every enabled area for each account this replica serves, tells every
    area which accounts it serves now (``serve``), and calls ``forget(account)`` when an account
    leaves this replica, after which the area keeps nothing of that account (traffic keeps
    the account's ledger, released, for ``series_retention_hours``: see docs/windowing.md).
    ``stop`` runs at shutdown (traffic saves its state file).
    """

    name: str
    title: str  # as the landing page shows it

    def enabled(self, settings: Settings) -> bool: ...

    def jobs(self, account: str) -> list[Job]: ...

    def serve(self, accounts: tuple[str, ...]) -> None: ...

    def asks_platform(self, account: str) -> bool:
        """Whether a poll of ``account`` sends requests (DVR without streams does not, so its
        success says nothing about the platform; readiness leaves it out)."""
        ...

    def forget(self, account: str) -> None: ...

    def stop(self) -> None: ...
