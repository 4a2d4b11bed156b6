"""The accounts the traffic poller keeps, across replicas: served, released (kept for
``series_retention_hours`` so counters continue if the account comes back), resumed, dropped."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Literal

import structlog

from exporter.exposition import Fragment
from exporter.support.clock import Clock
from exporter.traffic.ledger import AccountLedger
from exporter.traffic.settings import TrafficSettings
from exporter.traffic.state_lost import Lost
from exporter.traffic.transform import Latest
from exporter.traffic.windows import (
    MINUTE,
    TICK_SECONDS,
    last_ready_minute,
    tolerance_minutes,
)

log = structlog.get_logger("exporter.traffic")

# Why an account's ledger is released (the log's reason). MOVED: the minutes meanwhile are
# another replica's to count (read on from the newest minute when it comes back); the others:
# nobody counts them meanwhile (read from the ledger's cursor when it comes back).
Release = Literal[
    "moved to another shard", "removed from the config", "no longer listed by discovery"
]
MOVED: Release = "moved to another shard"
REMOVED: Release = "removed from the config"
UNLISTED: Release = "no longer listed by discovery"


@dataclass
class AccountState:
    """All the poller keeps of one account. The ledger (and which resources it folds) outlives
    a move to another replica for ``series_retention_hours`` so counters continue if the
    account comes back; the rest is dropped when the account leaves (``forget``)."""

    ledger: AccountLedger
    folded: frozenset[str] = frozenset()  # resources folded into __other__ at the last count
    latest: Latest | None = None  # the last window read
    fragment: Fragment | None = None  # the last fragment built
    stale: bool = False  # ``fragment`` was built with a view a reload replaced since
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)  # one cycle at a time


class Accounts:
    """Each account's ``AccountState`` by name; ``changed`` is told whenever what the state
    file would hold changes (an account released or dropped), ``named`` the minutes left
    without a settle read, with their outcome (``released``, ``given_up``); ``lost``: the
    state file was ignored as a whole (the accounts served at the start read on from it)."""

    def __init__(
        self,
        ledgers: dict[str, AccountLedger],
        clock: Clock,
        settings: TrafficSettings,
        changed: Callable[[], None],
        forget_audit: Callable[[str], None] | None = None,
        named: Callable[[str, str, int], None] | None = None,
        lost: Lost | None = None,
    ) -> None:
        self._by_name = {name: AccountState(led) for name, led in ledgers.items()}
        self._clock = clock
        self._settings = settings
        self._changed = changed
        self._forget_audit = forget_audit  # the audit is this replica's: it goes with the account
        self._named = named  # told the minutes owed a settle read an account left unread
        self._lost = lost  # until the first ``serve``: the accounts served then take it over

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_name)

    def items(self) -> list[tuple[str, AccountState]]:
        """A copy: the loop may add an account meanwhile (copying is atomic)."""
        return list(self._by_name.items())

    def get(self, account: str) -> AccountState | None:
        return self._by_name.get(account)

    def state(self, account: str) -> AccountState:
        """The account's state (created with an empty ledger on first use)."""
        st = self._by_name.get(account)
        if st is None:
            st = self._by_name[account] = AccountState(self._fresh(account))
        return st

    def ledger(self, account: str) -> AccountLedger:
        """The account's ledger (created empty on first use)."""
        return self.state(account).ledger

    def _fresh(self, account: str) -> AccountLedger:
        """A new ledger: empty, or, for an account served at the start while the state file
        was ignored as a whole (``state_lost.Lost``), read on from where that file left off. Its
        cursor is the one the file's text still holds, or the cursor file of its last save
        (``state_lost.dump_cursors``), else the newest minute ready at its save: never before the
        cursor then (no minute is counted twice); the file is saved
        after each poll that read and at the stop, within a poll of the read, so a minute
        that became ready in the poll before the save may not have been read: counted as
        missed. The minutes after the cursor are read (beyond ``catch_up_minutes`` counted
        as missed) into counters that start at 0 again. The runs the file owed a settle read
        are gone with it, counted as given up: the minutes the cursor file says were owed at
        that save, else at most the schedule's last age and its tolerance (less one)."""
        led = AccountLedger()
        lost = self._lost
        if lost is None:
            return led
        cursor = lost.cursors.get(account)
        cursor_from, unsure = "the file", 0
        if cursor is None and lost.saved_at is not None and lost.saved_at <= self._clock.time():
            saved_at = lost.saved_at  # (one after now, a clock stepped back, says nothing)
            cursor = last_ready_minute(saved_at, self._settings.delay_seconds)
            read_by = last_ready_minute(saved_at - TICK_SECONDS, self._settings.delay_seconds)
            cursor_from, unsure = "its save", (cursor - read_by) // MINUTE
        if cursor is None:
            log.warning(
                "traffic_state_lost",
                path=lost.path,
                problem=lost.problem,
                effect="the minutes since the file's save are neither read nor counted",
            )
            return led
        led.cursor = cursor
        led.dirty = True
        owed = lost.owed.get(account)
        if owed is None:  # at most what the schedule can owe
            ages = self._settings.settle_stages
            owed = ages[-1] + tolerance_minutes(ages[-1], ages) - 1 if ages else 0
        log.warning(
            "traffic_state_taken_over",
            path=lost.path,
            problem=lost.problem,
            cursor=cursor,
            cursor_from=cursor_from,
            missed_minutes=unsure,
            given_up_minutes=owed,
            effect="counters start at 0; the minutes after the cursor are read; the late "
            "data of the minutes owed a settle read is not counted",
        )
        if self._named is not None:
            for outcome, minutes in (("missed", unsure), ("given_up", owed)):
                if minutes:
                    self._named(account, outcome, minutes)
        return led

    def serve(self, accounts: Iterable[str]) -> None:
        """The accounts this replica serves now. The ledgers of the others (moved to another
        replica, or gone) are kept, in memory and in the state file, for
        ``series_retention_hours``, then dropped; an account that comes back meanwhile
        continues its counters (``resume``). Accounts not released by ``forget`` first are
        taken as moved."""
        now = self._clock.time()
        owned = set(accounts)
        for name in [n for n in self._by_name if n not in owned]:
            self._release(name, now, MOVED)
        self.drop_released(now)
        if self._lost is not None:  # the accounts served at the start take the file over
            for name in sorted(owned):
                self.state(name)
            self._lost = None

    def held(self) -> tuple[str, ...]:
        """The accounts whose ledgers are held and not released (at start: those the state
        file holds as served), sorted."""
        return tuple(sorted(n for n, st in self._by_name.items() if not st.ledger.released_at))

    def forget(self, account: str, reason: Release = MOVED) -> None:
        """The account left this replica (``reason``: MOVED, another replica serves it now;
        else it is gone from the account list): release its ledger (kept for
        ``series_retention_hours``, see ``serve``) and drop everything else kept of it."""
        if account in self._by_name:
            self._release(account, self._clock.time(), reason)

    def _release(self, name: str, now: float, reason: Release) -> None:
        st = self._by_name[name]
        if st.ledger.released_at:
            return
        st.ledger.released_at = now
        st.ledger.released_moved = reason == MOVED
        if reason == MOVED:  # the replica taking it over reads on from its newest minute
            self._release_owed(name, st.ledger, reason)
        elif st.ledger.pending:  # read when it comes back (``resume``), else named at the drop
            log.info(
                "traffic_settle_kept",
                account=name,
                minutes=sum(run.minutes for run in st.ledger.pending),
                reason=reason,
                effect="read if the account is served again within series_retention_hours",
            )
        self._changed()
        self._by_name[name] = AccountState(st.ledger, st.folded)
        if self._forget_audit is not None:
            self._forget_audit(name)
        log.info(
            "traffic_account_released",
            account=name,
            reason=reason,
            kept_hours=self._settings.series_retention_hours,
        )

    def _release_owed(
        self, name: str, led: AccountLedger, reason: str, counted: bool = True
    ) -> None:
        """The runs ``led`` owes a settle read are read by nobody now (not this replica, nor
        one that takes the account over, which reads on from its newest minute): logged, and
        counted as released while the account's series are still served (``counted``), never
        dropped untold. An account moved to another replica releases them at once; one gone
        from the account list keeps them with its ledger, read should it come back, and
        releases them when the ledger is dropped (its series are gone by then: the log line
        names them)."""
        owed = sum(run.minutes for run in led.pending)
        if not owed:
            return
        led.pending.clear()
        led.dirty = True
        log.warning(
            "traffic_settle_released",
            account=name,
            minutes=owed,
            reason=reason,
            effect="their late data is not counted; what their first reads counted stays",
        )
        if counted and self._named is not None:
            self._named(name, "released", owed)

    def drop_released(self, now: float) -> None:
        """Drop the ledgers released more than ``series_retention_hours`` ago."""
        keep = self._settings.series_retention_hours * 3600
        for name in [
            n
            for n, st in self._by_name.items()
            if st.ledger.released_at and now > st.ledger.released_at + keep
        ]:
            led = self._by_name[name].ledger
            self._release_owed(name, led, "released ledger dropped", counted=False)
            del self._by_name[name]
            self._changed()
            log.info("traffic_account_dropped", account=name)

    def resume(self, account: str, led: AccountLedger, ready: float) -> None:
        """An account served again, in its poll (its lines name it, bound in ``TrafficPoller.poll``;
        ``ready``: now on the clock that decides what is ready).
        Back from another replica: the minutes in between were that replica's to count; read
        on from the newest ready minute, counters continued. Back in the account list: the
        minutes missed are read from the ledger's cursor (up to ``catch_up_minutes``, the
        rest counted as missed) and counted once."""
        moved, led.released_moved = led.released_moved, False
        led.released_at = 0.0
        led.dirty = True
        last = last_ready_minute(ready, self._settings.delay_seconds)
        if led.cursor is None or led.cursor >= last - MINUTE:
            return
        missed = (last - MINUTE - led.cursor) // MINUTE
        if not moved:
            log.info("traffic_account_resumed", minutes_to_read=missed + 1)
            return
        led.cursor = last - MINUTE
        log.info(
            "traffic_account_resumed",
            skipped_minutes=missed,
            reason="read by the replica that served the account meanwhile",
        )
