"""Reads closed minutes of /app/metrics/v1/ per account, settles late data, publishes counters."""

from __future__ import annotations

from structlog.contextvars import bound_contextvars

from exporter.areakit.metrics import AreaMetrics
from exporter.exposition import Store
from exporter.support.clock import Clock
from exporter.traffic.accounts import Accounts
from exporter.traffic.auditor import Auditor
from exporter.traffic.cycle import Allowance, Budget, Parts, ReadCycle
from exporter.traffic.persist import Publisher, StateFile
from exporter.traffic.read import Reader
from exporter.traffic.reply import TrafficSource
from exporter.traffic.select import ResourceSelector
from exporter.traffic.settings import TrafficSettings
from exporter.traffic.skew import Clocks


class TrafficPoller:
    """Schedules the traffic polls: one poll of an account at a time (its log lines name it),
    each one ``ReadCycle``, and when the next one should run early because the budget held the
    last one back (``wake_at``). Built with the parts the callers use directly: the accounts
    kept (``accounts``), the clocks (``clocks``), the fragments and the state file
    (``publisher``), the read step and the output told final minutes (``reader``).

    Fetch, then process: requests run on the event loop and come back as received; one worker
    step reads them (``read.Reader``: decode, check, parse, count or settle) and a second builds
    the fragment and saves the state (``persist.Publisher``), so ``/metrics`` and ``/healthz``
    keep answering during a refresh, and the ledgers are never read and written at the same
    time (the worker does one step at a time).
    """

    def __init__(
        self,
        client: TrafficSource,
        store: Store,
        metrics: AreaMetrics,
        clock: Clock,
        settings: TrafficSettings,
        budget: Budget | None = None,
        auditor: Auditor | None = None,
    ) -> None:
        self._clock = clock
        select = ResourceSelector(
            settings.resources_include, settings.resources_exclude, settings.max_resources
        )
        self.clocks = Clocks(clock, metrics)
        file = StateFile(settings, metrics, clock)
        forget_audit = auditor.forget if auditor is not None else None

        def named(account: str, outcome: str, minutes: int) -> None:
            """``minutes`` of ``account`` owed a settle read are left unread, for ``outcome``
            (``Accounts``: released with the account, given up with a state file lost)."""
            metrics.traffic_windows.labels(account, outcome).inc(minutes)

        self.accounts = Accounts(
            file.load(), clock, settings, file.changed, forget_audit, named, file.lost
        )
        self.publisher = Publisher(
            store, metrics, clock, settings, self.accounts, file, self.clocks.platform_time
        )
        self.reader = Reader(self.accounts, self.clocks, select, settings, metrics, clock)
        allowance = Allowance(budget)
        parts = Parts(
            client, self.accounts, self.clocks, self.reader, allowance, settings, metrics, auditor
        )
        self.cycle = ReadCycle(parts, self.publisher)
        # account -> when a poll the budget held back should run again (``wake_at``)
        self._wake: dict[str, float] = {}

    async def poll(self, account: str) -> None:
        """One cycle of ``account``, alone (the account's lock): its log lines name it
        (bound once)."""
        async with self.accounts.state(account).lock:
            now = self.clocks.now()  # a step's line is the host's, not the account's
            with bound_contextvars(account=account):
                delay = await self.cycle.run(account, now)
            if delay is not None:
                self._wake[account] = self._clock.time() + delay

    def wake_at(self, account: str) -> float | None:
        """When the account's next poll should run (wall clock) because the budget held its
        last one back and frees before the next tick; asked once after each poll."""
        return self._wake.pop(account, None)
