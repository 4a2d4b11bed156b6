"""Follows talking-head tasks submitted through the admin surface until they end, and counts them.

Exposition (store key ``talking_head_tasks/{account}``)::

    cdnvideo_talking_head_tasks{account="demo-media",status="in_queue"} 0
    cdnvideo_talking_head_tasks{account="demo-media",status="processed"} 3

Each tracked task is asked for its status with a growing delay (``first_delay`` doubling up to
``max_delay``), which spends the platform's small monthly request allowance sparingly, until it
is ``processed`` or ``canceled`` (or followed for ``give_up_after`` seconds).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

import structlog

from exporter.exposition import Fragment, MetricSpec, Store, StoreKey
from exporter.support.clock import Clock
from exporter.talking_head.reply import TH_STATUS, parse_th_status
from exporter.upstream import Operations, UpstreamError

log = structlog.get_logger("exporter.talking_head.tasks")

TASKS = MetricSpec(
    "cdnvideo_talking_head_tasks",
    "gauge",
    "Talking-head tasks submitted through the admin surface since the exporter started, "
    "by their current status (followed until processed or canceled).",
    ("account", "status"),
    source=TH_STATUS.path,
)
SPECS = (TASKS,)

STATUSES = ("in_queue", "processing", "processed", "canceled")
FINAL = frozenset({"processed", "canceled"})
_STATUS_LABEL = re.compile(r"[a-z][a-z0-9_]{0,31}")


def store_key(account: str) -> StoreKey:
    return StoreKey("talking_head_tasks", account)


def status_label(raw: str) -> str:
    """Lower-case status for the label; anything odd becomes ``unknown`` (bounded cardinality)."""
    value = raw.strip().lower().replace(" ", "_")
    if value == "cancelled":
        value = "canceled"
    return value if _STATUS_LABEL.fullmatch(value) else "unknown"


class TrackerContext(Protocol):
    """What the tracker uses of the service's context (``exporter.runtime.Context`` fits)."""

    @property
    def clock(self) -> Clock: ...

    @property
    def store(self) -> Store: ...

    @property
    def ops(self) -> Operations: ...


@dataclass
class _Task:
    account: str
    task_id: str
    status: str
    since: float
    due: float
    delay: float


class TaskTracker:
    """Tracks tasks per account; ``run()`` is the background loop, ``poll_due()`` one pass."""

    def __init__(
        self,
        ctx: TrackerContext,
        first_delay: float = 10.0,
        max_delay: float = 600.0,
        give_up_after: float = 86_400.0,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    ) -> None:
        self._ctx = ctx
        self.first_delay = first_delay
        self.max_delay = max_delay
        self.give_up_after = give_up_after
        self._sleep = sleep
        self._following: dict[tuple[str, str], _Task] = {}
        self._ended: dict[str, dict[str, int]] = {}
        self._wake = asyncio.Event()
        self._running = False

    # --- the admin surface's side ----------------------------------------------------------
    def track(self, account: str, task_id: str) -> None:
        """Start following a task that was just accepted (status ``in_queue``)."""
        key = (account, task_id)
        if key in self._following:
            return
        now = self._ctx.clock.time()
        self._following[key] = _Task(
            account, task_id, "in_queue", now, now + self.first_delay, self.first_delay
        )
        log.info("task_tracked", account=account, task_id=task_id)
        self.publish(account)
        self._wake.set()

    def ended(self, account: str, task_id: str, status: str) -> None:
        """A followed task reached ``status`` through the admin surface (``canceled`` by a
        cancel, ``deleted`` by a delete): counted so at once, not asked for again (a
        deleted task's status would be a 404, which says nothing of how it ended)."""
        task = self._following.get((account, task_id))
        if task is not None:
            self._end(task, status, "admin")

    def forget(self, account: str) -> None:
        """Stop following the tasks of ``account`` and drop its counts (it left this replica;
        the replica that serves it now counts from there)."""
        for key in [k for k in self._following if k[0] == account]:
            del self._following[key]
        self._ended.pop(account, None)

    def knows(self, account: str) -> bool:
        """Whether tasks or counts of ``account`` are kept (diagnostics and tests)."""
        return account in self._ended or any(k[0] == account for k in self._following)

    def following(self) -> list[tuple[str, str, str]]:
        """(account, task id, last known status) of tasks not yet at an end state."""
        return [(t.account, t.task_id, t.status) for t in self._following.values()]

    def counts(self, account: str) -> dict[str, int]:
        out = dict.fromkeys(STATUSES, 0)
        for status, n in self._ended.get(account, {}).items():
            out[status] = out.get(status, 0) + n
        for t in self._following.values():
            if t.account == account:
                out[t.status] = out.get(t.status, 0) + 1
        return out

    def fragment(self, account: str) -> Fragment:
        b = self._ctx.store.selection.builder()
        b.declare(*SPECS)
        for status, n in sorted(self.counts(account).items()):
            b.add(TASKS, (account, status), n)
        return b.build()

    def publish(self, account: str) -> None:
        self._ctx.store.publish(store_key(account), self.fragment(account))

    # --- following ------------------------------------------------------------------------
    async def poll_due(self) -> int:
        """Ask for the status of every task that is due; returns how many were asked."""
        now = self._ctx.clock.time()
        due = [t for t in self._following.values() if t.due <= now]
        for task in due:
            await self._check(task)
        return len(due)

    async def _check(self, task: _Task) -> None:
        changed = False
        try:
            reply = await self._ctx.ops.send(TH_STATUS, task.account, task_id=task.task_id)
        except UpstreamError as exc:
            log.info(
                "task_status_failed", account=task.account, task_id=task.task_id, error=str(exc)
            )
        else:
            if reply.ok and reply.data is not None:
                try:
                    status = status_label(parse_th_status(reply.data).status)
                except UpstreamError as exc:
                    log.info("task_status_invalid", account=task.account, error=str(exc))
                else:
                    changed = status != task.status
                    task.status = status
            elif reply.status == 404:  # the platform no longer knows it: deleted elsewhere
                self._end(task, "deleted", "not_found")
                return
            else:
                log.info(
                    "task_status_failed",
                    account=task.account,
                    task_id=task.task_id,
                    status=reply.status,
                )
        now = self._ctx.clock.time()
        if task.status in FINAL:
            self._end(task, task.status, "finished")
            return
        if now - task.since >= self.give_up_after:
            self._end(task, task.status, "given_up")
            return
        task.delay = min(task.delay * 2, self.max_delay)
        task.due = now + task.delay
        if changed:
            self.publish(task.account)

    def _end(self, task: _Task, status: str, why: str) -> None:
        self._following.pop((task.account, task.task_id), None)
        ended = self._ended.setdefault(task.account, {})
        ended[status] = ended.get(status, 0) + 1
        log.info("task_ended", account=task.account, task_id=task.task_id, status=status, why=why)
        self.publish(task.account)

    def next_due(self) -> float | None:
        return min((t.due for t in self._following.values()), default=None)

    async def run(self, idle_seconds: float = 60.0) -> None:
        """Background loop: check due tasks, then sleep until the next one (or a new track).

        Only one loop runs per tracker: a second call returns at once.
        """
        if self._running:
            return
        self._running = True
        try:
            await self._loop(idle_seconds)
        finally:
            self._running = False

    async def _loop(self, idle_seconds: float) -> None:
        while True:
            try:
                await self.poll_due()
            except Exception as exc:  # the loop must survive anything one check does
                log.warning("task_poll_failed", error=f"{type(exc).__name__}: {exc}")
            nxt = self.next_due()
            wait = idle_seconds if nxt is None else max(0.05, nxt - self._ctx.clock.time())
            self._wake.clear()
            sleeper = asyncio.ensure_future(self._sleep(min(wait, idle_seconds)))
            waker = asyncio.ensure_future(self._wake.wait())
            try:
                await asyncio.wait({sleeper, waker}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                sleeper.cancel()
                waker.cancel()
