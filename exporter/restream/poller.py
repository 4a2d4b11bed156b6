"""Polls restream resources, status and status history per account and publishes fragments."""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import structlog
from structlog.contextvars import bound_contextvars

from exporter.exposition import FamilySelection, Fragment, Store, StoreKey
from exporter.restream.identity import (
    KeyFingerprint,
    TargetId,
    history_secrets,
    resource_secrets,
    status_secrets,
    utc_text,
)
from exporter.restream.reply import HistoryPoint, RestreamResource, StatusRecord
from exporter.restream.settings import RestreamSettings
from exporter.restream.transform import (
    Change,
    fold_histories,
    history_fragment,
    status_fragment,
)
from exporter.support.clock import Clock
from exporter.support.logs import Redactor
from exporter.support.offloop import off_loop

log = structlog.get_logger("exporter.restream")

STALE_AFTER_INTERVALS = 5
# The first history read of an account looks back this far.
FIRST_HISTORY_LOOKBACK_SECONDS = 86400.0
# Later reads start this long before the end of the previous read (late or boundary points).
HISTORY_OVERLAP_SECONDS = 60.0
# A resource whose status did not change is still re-read once in this many history polls
# (a change and its undoing between two status polls shows only in the history).
HISTORY_ROUND_ROBIN_POLLS = 12

Signature = tuple[tuple[str, str, str, int], ...]


class RestreamClient(Protocol):
    """What the restream poller reads (``reply.RestreamReader`` sends it)."""

    async def restream_resources(self, account: str) -> list[RestreamResource]: ...

    async def restream_status(
        self, account: str, resource_id: str | None = None
    ) -> list[StatusRecord]: ...

    async def restream_history(
        self, account: str, resource_id: str, start: str, end: str
    ) -> list[HistoryPoint]: ...


@dataclass
class AccountState:
    """All the poller keeps of one account; dropped whole when the account leaves (``forget``)."""

    resource_ids: tuple[str, ...] | None = None  # from the latest status poll
    changes: dict[TargetId, Change] = field(default_factory=dict)  # history folded so far
    status_sig: dict[str, Signature] = field(default_factory=dict)  # per resource, latest status
    read_sig: dict[str, Signature | None] = field(default_factory=dict)  # at its last history read
    read_end: dict[str, float] = field(default_factory=dict)  # end of its last history read
    credit: float = 0.0  # round-robin reads owed (a fraction of one)
    runs: int = 0  # history polls done, to tell the slices apart


def status_key(account: str) -> StoreKey:
    return StoreKey("restream", account)


def history_key(account: str) -> StoreKey:
    return StoreKey("restream_history", account)


class RestreamPoller:
    """Restream metrics of every account.

    ``poll`` sends one ``/resources`` and one ``/status`` request and publishes
    ``restream/<account>``; ``poll_history`` reads ``/history`` and publishes
    ``restream_history/<account>``. History costs one request per resource, so it is read
    only where it can have changed: resources never read (the last 24 hours at first),
    resources whose status (the codes of their targets) changed since their last history
    read, and a round-robin share of the rest, so that every resource is read again at least
    every HISTORY_ROUND_ROBIN_POLLS polls, and at least one resource per interval (so a failing
    history endpoint or token shows). Each read starts where that resource's last one
    ended. With ``slices`` > 1 the history job runs that many times per interval, and the
    first reads of new resources are spread over those runs.
    A failed poll raises and publishes nothing: the last fragment stays until it is
    ``5 x interval`` old. Every secret seen in a reply is taught to the log redactor first.

    ``fingerprint_secret`` keys the ``target_key`` fingerprint (the service passes the upstream
    token or password, as the admin API's masks use: ``identity.fingerprint_secret``); without
    one the fingerprint is an unkeyed, salted hash.
    """

    def __init__(
        self,
        client: RestreamClient,
        store: Store,
        clock: Clock,
        settings: RestreamSettings,
        redactor: Redactor,
        fingerprint_secret: str | bytes | None = None,
        slices: int = 1,
    ) -> None:
        self._client = client
        self._store = store
        self._clock = clock
        self._settings = settings
        self._redactor = redactor
        secret = fingerprint_secret or b""
        self.fingerprint = KeyFingerprint(secret.encode() if isinstance(secret, str) else secret)
        self._slices = max(1, slices)
        self._accounts: dict[str, AccountState] = {}

    def _state(self, account: str) -> AccountState:
        st = self._accounts.get(account)
        if st is None:
            st = self._accounts[account] = AccountState()
        return st

    def state(self, account: str) -> AccountState | None:
        """What the poller keeps of ``account`` (None: nothing); for diagnostics and tests."""
        return self._accounts.get(account)

    def forget(self, account: str) -> None:
        """Drop everything kept of ``account`` (it left this replica)."""
        self._accounts.pop(account, None)

    def knows(self, account: str) -> bool:
        """Whether anything of ``account`` is kept (diagnostics and tests)."""
        return account in self._accounts

    async def poll(self, account: str) -> None:
        fingerprint = self.fingerprint
        resources, statuses = await asyncio.gather(
            self._client.restream_resources(account), self._client.restream_status(account)
        )
        with bound_contextvars(account=account):  # the poll's own lines (see support.logs)
            # pure work per resource (secrets, URL cleaning, fingerprints, schedules,
            # signatures): in a worker thread, so many resources do not hold the event loop.
            # See docs/performance.md#figures-behind-the-code and
            # docs/performance.md#reply-work-in-the-worker-threads-not-on-the-loop.
            fragment, duplicates, sigs = await off_loop(
                _digest_status,
                self._redactor,
                account,
                resources,
                statuses,
                self._clock.time(),
                fingerprint,
                self._store.selection,
            )
            if duplicates:
                log.warning("restream_duplicate_series", dropped=duplicates)
            st = self._state(account)
            st.resource_ids = tuple(r.resource_id for r in resources)
            st.status_sig = sigs
            self._store.publish(
                status_key(account),
                fragment,
                max_age=STALE_AFTER_INTERVALS * self._settings.interval_seconds,
            )
            log.debug(
                "restream_polled",
                resources=len(resources),
                targets=sum(len(s.targets) for s in statuses),
            )

    def history_plan(self, account: str, ids: tuple[str, ...] | None = None) -> list[str]:
        """The resources the next history poll reads (see the class docstring)."""
        st = self._accounts.get(account) or AccountState()
        return self._plan(st, (st.resource_ids or ()) if ids is None else ids)[0]

    def _plan(self, st: AccountState, ids: tuple[str, ...]) -> tuple[list[str], float]:
        """(resources to read, round-robin credit left after this poll)."""
        sig = st.status_sig
        read = st.read_sig
        never = [rid for rid in ids if rid not in read]
        changed = [rid for rid in ids if rid in read and read[rid] != sig.get(rid)]
        rest = [rid for rid in ids if rid in read and read[rid] == sig.get(rid)]
        new = never[: math.ceil(len(ids) / self._slices)]
        # the share accrues a fraction per poll, so small accounts are not read every time
        credit = st.credit + len(rest) / (HISTORY_ROUND_ROBIN_POLLS * self._slices)
        share = min(len(rest), math.floor(credit + 1e-9))
        ends = st.read_end
        first_slice = st.runs % self._slices == 0
        if rest and first_slice and not (changed or new or share):
            share = 1  # one read per interval at least: the history endpoint's health shows
        picked = sorted(rest, key=lambda rid: ends.get(rid, 0.0))[:share]  # longest unread
        return changed + new + picked, max(0.0, credit - share)

    async def poll_history(self, account: str) -> None:
        fingerprint = self.fingerprint
        known_state = self._accounts.get(account)
        ids = known_state.resource_ids if known_state is not None else None
        if ids is None:  # history before the first status poll: learn the resources ourselves
            resources = await self._client.restream_resources(account)
            self._redactor.learn(*resource_secrets(resources))
            ids = tuple(r.resource_id for r in resources)
        now = self._clock.time()
        st = self._state(account)
        plan, credit = self._plan(st, ids)
        ends = st.read_end
        starts = {
            rid: now - FIRST_HISTORY_LOOKBACK_SECONDS
            if rid not in ends
            else ends[rid] - HISTORY_OVERLAP_SECONDS
            for rid in plan
        }
        end_text = utc_text(now)
        try:
            async with asyncio.TaskGroup() as group:
                tasks = [
                    group.create_task(
                        self._client.restream_history(account, rid, utc_text(starts[rid]), end_text)
                    )
                    for rid in plan
                ]
        except ExceptionGroup as group_error:  # report the upstream error itself
            raise group_error.exceptions[0] from None
        known = set(ids)
        reads = [(rid, task.result()) for rid, task in zip(plan, tasks, strict=True)]
        with bound_contextvars(account=account):  # the poll's own lines (see support.logs)
            # the secrets learned, the points folded into the changes and the fragment built in
            # a worker thread, not on the event loop
            # (docs/performance.md#reply-work-in-the-worker-threads-not-on-the-loop)
            state, fragment = await off_loop(
                _digest_history,
                self._redactor,
                account,
                {t: c for t, c in st.changes.items() if t[0] in known},
                reads,
                fingerprint,
                self._store.selection,
            )
            sig = st.status_sig
            read = st.read_sig
            for rid in plan:
                read[rid] = sig.get(rid)
                ends[rid] = now
            st.credit = credit
            st.runs += 1
            for gone in [rid for rid in read if rid not in known]:
                del read[gone]
                ends.pop(gone, None)
            st.changes = state
            self._store.publish(
                history_key(account),
                fragment,
                max_age=STALE_AFTER_INTERVALS * self._settings.history_interval_seconds,
            )
            log.debug(
                "restream_history_polled",
                resources=len(ids),
                read=len(plan),
                targets=len(state),
            )


def _digest_status(
    redactor: Redactor,
    account: str,
    resources: Sequence[RestreamResource],
    statuses: Sequence[StatusRecord],
    now: float,
    fingerprint: KeyFingerprint,
    selection: FamilySelection,
) -> tuple[Fragment, int, dict[str, Signature]]:
    """A status poll's work on its replies (a worker thread): the secrets they carry learned
    first, so no log line can show one, then the fragment and each resource's signature."""
    redactor.learn(*resource_secrets(resources), *status_secrets(statuses))
    fragment, duplicates = status_fragment(
        account, resources, statuses, now, fingerprint, selection
    )
    return fragment, duplicates, {rec.resource_id: signature(rec) for rec in statuses}


def _digest_history(
    redactor: Redactor,
    account: str,
    changes: dict[TargetId, Change],
    reads: list[tuple[str, list[HistoryPoint]]],
    fingerprint: KeyFingerprint,
    selection: FamilySelection,
) -> tuple[dict[TargetId, Change], Fragment]:
    """A history poll's work on its replies (a worker thread): their secrets learned first,
    then the points folded into the latest change per target, and the fragment."""
    for _, points in reads:
        redactor.learn(*history_secrets(points))
    state = fold_histories(changes, reads, fingerprint)
    return state, history_fragment(account, state, selection)


def signature(record: StatusRecord) -> Signature:
    """What a history read would change: each target's code (targets in a stable order)."""
    return tuple(sorted((t.source, t.target_url, t.target_key, t.code) for t in record.targets))
