"""The audit's reads: one settled window re-read per poll when nothing else is owed, compared
with what was counted, and the record kept beside the state file, in pieces
(``<state_file>.audit/``: ``exporter.traffic.audit_record``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import structlog

from exporter.exposition import Store, StoreKey
from exporter.support import offloop
from exporter.support.clock import Clock
from exporter.traffic.audit import DEFAULT_POLICY, AuditBook, Counted, Policy
from exporter.traffic.audit_record import AuditRecord, Pieces
from exporter.traffic.parse import Values
from exporter.traffic.read import totals_of
from exporter.traffic.steps import on_worker
from exporter.traffic.windows import Window
from exporter.upstream.errors import UpstreamError

if TYPE_CHECKING:  # the poller holds an Auditor; its narrow source is the auditor's too
    from exporter.traffic.reply import TrafficSource

log = structlog.get_logger("exporter.traffic.audit")

# Requests an audit read leaves in the account's budget: the next minute's first read and a
# settle read, both halves each. An audit read is never what makes a traffic read wait.
HEADROOM = 4
SAVE_SECONDS = 60.0


def audit_path(state_file: str) -> str:
    """The name of a state file's audit record ('' when there is no state file): the older
    whole-file record was this file; the record is kept in pieces in the directory of the
    same name without ``.json`` (``<state_file>.audit/``)."""
    return f"{state_file}.audit.json" if state_file else ""


def audit_record(path: str) -> AuditRecord:
    """The record named ``path`` (``audit_path``): its pieces, and the older whole file."""
    return AuditRecord(path.removesuffix(".json") if path else "", path)


class AuditBudget(Protocol):
    def affords(self, account: str, area: str, count: int) -> bool: ...

    def limit(self, account: str) -> float | None: ...


async def read_totals(source: TrafficSource, account: str, w: Window) -> Values:
    """The platform's account totals for ``w`` now (raises UpstreamError)."""
    answer = await source.traffic(account, w.start, w.end, False)
    return await on_worker(totals_of, answer, account, w)  # decoded and checked there


class Auditor:
    """The audit of the accounts one poller serves."""

    def __init__(
        self,
        source: TrafficSource,
        store: Store,
        clock: Clock,
        path: str,
        budget: AuditBudget | None = None,
        policy: Policy = DEFAULT_POLICY,
    ) -> None:
        self._source = source
        self._store = store
        self._clock = clock
        self._path = path
        self._budget = budget
        self.book = AuditBook(policy)
        self._record = audit_record(path)
        self._saved_at = 0.0
        self._changed: set[str] = set()  # accounts whose audit figures changed since published
        self._published: set[str] = set()
        if path:
            self._load()

    def _load(self) -> None:
        try:
            self._record.load(self.book)
        except (OSError, ValueError, KeyError, TypeError, IndexError) as exc:
            log.warning("traffic_audit_record_ignored", path=self._path, problem=str(exc))
            self.book.accounts.clear()

    def forget(self, account: str) -> None:
        """``account`` left this replica: its record goes (the store drops its families, so
        they are published afresh should it come back)."""
        self.book.forget(account)
        self._changed.discard(account)
        self._published.discard(account)

    def knows(self, account: str) -> bool:
        """Whether anything of ``account`` is kept (diagnostics and tests)."""
        return account in self.book.accounts or account in self._published

    def settled(self, account: str, window: Window, totals: Values) -> None:
        self.book.settled(account, window, totals, self._clock.time())
        self._record.settled(account, self.book.accounts[account].counted[-1])
        self._changed.add(account)

    async def step(self, account: str, long_windows: bool) -> None:
        """Re-read one window of the audit under way (or starting), if the budget affords it
        with HEADROOM to spare; publish the account's audit families."""
        now = self._clock.time()
        unlimited = self._budget is None or self._budget.limit(account) is None
        pick = self.book.next_window(account, now, everything=unlimited and long_windows)
        if pick is not None and self._affords(account):
            await self._audit(account, pick, now)
            self._changed.add(account)
        if account in self._changed or account not in self._published:
            self._store.publish(StoreKey("traffic_audit", account), self.book.fragment(account))
            self._changed.discard(account)
            self._published.add(account)
        if self._save_due(now):  # taken on the loop (small pieces), made and written on the worker
            pieces = self._take()
            if not await offloop.off_loop(self._write, pieces, now):
                self._record.put_back(pieces)

    def _affords(self, account: str) -> bool:
        return self._budget is None or self._budget.affords(account, "traffic", 1 + HEADROOM)

    async def _audit(self, account: str, pick: Counted, now: float) -> None:
        try:
            platform = await read_totals(self._source, account, pick.window)
        except UpstreamError as exc:
            if exc.invalid_parameters:  # a window the platform no longer accepts
                self.book.skip(account, pick)
            log.info("traffic_audit_read_failed", account=account, window=str(pick.window),
                     error=exc.message)  # fmt: skip
            return
        if not self.book.compare(account, pick, platform, now):
            log.warning("traffic_audit_differs", account=account, window=str(pick.window))
        a = self.book.accounts[account]
        if a.running is None and a.last is not None and not a.sample:
            log.info("traffic_audit_done", account=account, equal_minutes=a.last.equal,
                     differing_minutes=a.last.differs)  # fmt: skip

    def _save_due(self, now: float) -> bool:
        return bool(self._path) and self.book.dirty and now >= self._saved_at + SAVE_SECONDS

    def save(self, force: bool = False) -> None:
        """Write the record now if it changed (``force``), else once SAVE_SECONDS passed."""
        now = self._clock.time()
        if self._path and self.book.dirty and (force or self._save_due(now)):
            pieces = self._take()
            if not self._write(pieces, now):
                self._record.put_back(pieces)

    def _take(self) -> Pieces:
        """What the next save writes; changes after this mark the book dirty again."""
        self.book.dirty = False
        return self._record.take(self.book)

    def _write(self, pieces: Pieces, now: float) -> bool:
        try:
            self._record.write(pieces, now, self.book.policy.keep_seconds)
        except OSError as exc:
            self.book.dirty = True
            where = self._record.directory
            log.error("traffic_audit_record_save_failed", path=where, problem=str(exc))
            return False
        self._saved_at = now
        return True
