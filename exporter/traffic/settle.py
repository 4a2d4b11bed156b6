"""A poll's settle reads (``SettleReads``): every run due, most overdue first, each re-read at
its next age (its halves, totals first, and its pieces when longer than the windows the
platform answers now) as far as the budget and the rate limit afford; a read stopped part-way
is kept and finished at a later poll."""

from __future__ import annotations

from typing import TYPE_CHECKING

import structlog

from exporter.traffic import policy
from exporter.traffic.echo import WindowMismatch
from exporter.traffic.read import Planned, Read, final, postponement, send
from exporter.traffic.runs import Run
from exporter.traffic.steps import on_worker
from exporter.traffic.windows import Window
from exporter.upstream.errors import UpstreamError

if TYPE_CHECKING:  # the cycle builds the settle reads with its own parts
    from exporter.traffic.cycle import Cycle, Parts

log = structlog.get_logger("exporter.traffic")


class SettleReads:
    """The settle reads of one poll, with the parts of its cycle (``cycle.Parts``)."""

    def __init__(self, parts: Parts) -> None:
        self._p = parts

    async def due(self, cycle: Cycle) -> None:
        """Settle every run due now, most overdue first, while the budget and the platform's
        rate limit afford it: a backlog (after an outage, or runs falling due together) is
        read in one poll, as the first reads behind are, and holds back no run due after it.
        Each complete read moves a run on an age (or drops it), so the loop ends."""
        led = cycle.led
        for _ in range(len(led.pending) * len(policy.stages(self._p.settings, led)) + 1):
            if cycle.postponed or (cycle.settled and not cycle.complete):
                return  # waits for the budget or the rate limit, or a clock in doubt
            if cycle.settled:  # the last run's read is complete: the next run due
                cycle.run, cycle.settled, cycle.complete = None, False, False
            await self.one(cycle)
            if not cycle.settled:  # nothing due
                return

    async def one(self, cycle: Cycle, run: Run | None = None, leave: int = 0) -> None:
        """Re-read what ``run`` (else the run this poll began with, else the most overdue
        run) owes at its next age: the halves (totals first) and, for a run longer than the
        windows the platform answers now, the pieces, as many as the budget affords with
        ``leave`` requests to spare. Pieces and halves read are kept (``Run.pieces``,
        ``Run.done``) and the rest is read at later polls: a read is never thrown away
        because the budget or a rate limit stopped it part-way. A half the platform failed
        backs the run off (``_failed``). With ``leave``, a read the budget cannot
        afford is left for later in the poll (the first reads go first), not postponed."""
        led = cycle.led
        # On the worker: the runs past a day are given up first (none before a run is due).
        ready = self._p.clocks.ready_time(cycle.now)
        picked = None
        if policy.reached(led, ready, self._p.settings):
            picked = await on_worker(
                policy.due,
                self._p.metrics,
                cycle.account,
                led,
                ready,
                self._p.settings,
                cycle.aside,
            )
        if cycle.run is not None:
            run = cycle.run
        run = picked if run is None or run not in led.pending else run
        if run is None:
            return
        cycle.run = run
        stages = policy.stages(self._p.settings, led)
        while True:
            w, read = await self._piece(cycle, run, ready, leave)
            if read is None:
                return
            error = read.error
            if read.doubted and error is None:
                # read on a clock its replies doubt: maybe before its age; stays owed and is
                # read again next poll, while the other runs due are read in this one
                cycle.aside.append(run)
                cycle.settled = cycle.complete = True
                return
            if read.read and self._counted(cycle, run, read, stages):
                return
            if error is not None:
                self._failed(cycle, run, w, error)
                return

    async def _piece(
        self, cycle: Cycle, run: Run, ready: float, leave: int
    ) -> tuple[Window, Read | None]:
        """The next piece of ``run``'s read at its age: the halves the budget affords sent
        and read (None: none afforded; the cycle waits unless ``leave`` keeps it for later)."""
        led, account = cycle.led, cycle.account
        longest = policy.longest(led, cycle.now)
        w, halves = run.next_read(self._p.settings.per_resource, longest)
        while halves and not self._p.allowance.can(account, len(halves), leave):
            halves = halves[:-1]  # the halves the budget affords, totals first
        if not halves:
            if not leave:
                cycle.settled = True
                self._p.allowance.wait(cycle)
            return w, None
        planned = Planned(cycle.now, ready, self._p.clocks.doubts)
        sent = await send(self._p.client, account, w, halves)
        cap = policy.cap(longest, self._p.reader.final_minutes is not None)
        read = await on_worker(self._p.reader.settle, account, led, run, sent, planned, cap)
        return w, read

    def _counted(self, cycle: Cycle, run: Run, read: Read, stages: tuple[int, ...]) -> bool:
        """What a settle read counted; True when the run's read at this age is complete."""
        cycle.read = True
        if read.increased:
            self._p.metrics.traffic_windows.labels(cycle.account, "revised").inc(run.minutes)
            log.debug("traffic_window_revised", window=str(run.window))
        if read.complete and final(run, cycle.led, stages) and self._p.auditor is not None:
            self._p.auditor.settled(cycle.account, run.window, run.totals)  # its counts are final
        if read.complete and read.error is None:
            cycle.settled = cycle.complete = True
            return True
        return False

    def _failed(self, cycle: Cycle, run: Run, w: Window, error: UpstreamError) -> None:
        """A half of ``run``'s piece ``w`` not answered: the read waits (budget, rate limit),
        the window shrinks (refused, timed out), and the run backs off; raises ``error``
        unless the read waits or long windows were refused just now."""
        led, account, now = cycle.led, cycle.account, cycle.now
        cycle.settled = True
        if postponement(error):
            cycle.wait(error)
            return
        if isinstance(error, WindowMismatch):
            self._p.metrics.traffic_windows.labels(account, "mismatched").inc(error.window.minutes)
        if policy.refusal(error) and w.minutes > 1 and not led.long_refused:
            policy.refuse_long(led, w, error)
            return  # re-read minute by minute next cycle
        if policy.slow(error) and w.minutes > 1:
            policy.shrink(led, w, error, now)
        policy.settle_failed(
            self._p.metrics, account, led, run, now, self._p.clocks.ready_time(now), error
        )
        raise error
