"""Each account's fragment built, its counters saved to the state file, then published: a
value Prometheus scraped is always on disk, so a restart never shows a counter lower."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping

import structlog

from exporter.areakit.metrics import AreaMetrics
from exporter.exposition import Fragment, Store, StoreKey
from exporter.support import offloop
from exporter.support.clock import Clock
from exporter.support.partfile import PartFile
from exporter.traffic import exposure, state, state_lost, state_read
from exporter.traffic.accounts import Accounts, AccountState
from exporter.traffic.families import View, exported_keys
from exporter.traffic.ledger import AccountLedger
from exporter.traffic.settings import TrafficSettings
from exporter.traffic.steps import on_worker, untied_task
from exporter.traffic.transform import build_fragment
from exporter.traffic.windows import MINUTE

log = structlog.get_logger("exporter.traffic")

# A traffic fragment not refreshed for this long (the upstream failing) leaves /metrics.
FRAGMENT_MAX_AGE_SECONDS = 600.0
# A state file that cannot be written is logged at most this often.
SAVE_FAILURE_LOG_SECONDS = 600.0


class StateFile:
    """The traffic state file: every ledger, loaded at start and replaced after a change."""

    def __init__(self, settings: TrafficSettings, metrics: AreaMetrics, clock: Clock) -> None:
        self.path = settings.state_file
        self._stages = settings.settle_stages
        self._metrics = metrics
        self._clock = clock
        self.on_disk = False  # a snapshot a restart would load exists
        self.unsaved = False
        self.failure_logged = 0.0  # when a failed save was last logged (0 = saving works)
        # the file as the last save wrote it: the next copies the parts that did not change
        self._file = PartFile(self.path)
        self.lost: state_lost.Lost | None = None  # the file was ignored as a whole (``load``)

    def load(self) -> dict[str, AccountLedger]:
        """The ledgers the file holds (none without a file); entries refused are counted,
        and a file ignored as a whole leaves what its text still says in ``lost``."""
        rejected: list[str] = []
        lost: list[state_lost.Lost] = []
        ledgers = state_read.load(self.path, rejected, lost) if self.path else {}
        self.lost = lost[0] if lost else None
        self._metrics.state_entries_rejected.inc(len(rejected))
        self.on_disk = bool(ledgers)
        return ledgers

    @property
    def held_back(self) -> bool:
        """Whether new counters wait for a save: the last one failed and a snapshot a restart
        would load exists."""
        return self.failure_logged != 0.0 and self.on_disk

    def changed(self) -> None:
        """What the file would hold changed: saved at the next publish."""
        self.unsaved = True

    def write(
        self, ledgers: Mapping[str, AccountLedger], exported: Mapping[str, list[str]]
    ) -> bool:
        """Snapshot ``ledgers`` and replace the file (on the worker thread)."""
        now = self._clock.time()
        if self._stages:  # with settling off, the runs owed keep the schedule they had
            for led in ledgers.values():
                led.schedule = self._stages
        cursors = state_lost.dump_cursors(ledgers, now)  # of the same snapshot
        try:
            self._file.write(state.pieces(ledgers, now, exported))
        except OSError as exc:
            self._metrics.state_save_failures.inc()
            if now >= self.failure_logged + SAVE_FAILURE_LOG_SECONDS:
                self.failure_logged = now
                log.error(
                    "traffic_state_save_failed",
                    path=self.path,
                    problem=str(exc),
                    effect="new traffic counters are held back until a save succeeds",
                )
            return False
        try:
            state.write_atomic(state_lost.cursors_path(self.path), cursors)
        except OSError as exc:  # the state file itself is saved: only a fallback is stale
            log.warning(
                "traffic_state_cursors_save_failed",
                path=state_lost.cursors_path(self.path),
                problem=str(exc),
                effect="a state file damaged later is read on from the cursors it still shows",
            )
        if self.failure_logged:
            self.failure_logged = 0.0
            log.info("traffic_state_saved_again", path=self.path)
        self._metrics.state_last_save.set(now)
        self.on_disk = True
        return True


class Publisher:
    """Builds each account's fragment against the one it replaces, saves the state file first
    and publishes ``traffic/<account>`` (or holds new counters back while saving fails)."""

    def __init__(
        self,
        store: Store,
        metrics: AreaMetrics,
        clock: Clock,
        settings: TrafficSettings,
        accounts: Accounts,
        file: StateFile,
        platform_time: Callable[[float], float],
    ) -> None:
        self.store = store
        self._metrics = metrics
        self._clock = clock
        self._settings = settings
        self._accounts = accounts
        self.file = file
        self._platform_time = platform_time  # the lag gauge's clock
        self._view = View.of(
            store.selection, settings.resource_status_codes, settings.resource_request_times
        )
        self._selected = self._view  # the newest view asked for (``reselect``)
        # Builds done (counted on the worker) and how many of them the last good save holds;
        # the one save queued or under way, which every publish built before it began joins.
        self._built = 0
        self._covered = 0
        self._saving: asyncio.Task[bool] | None = None
        self._reselected: list[asyncio.Future[None]] = []  # ``reselect`` steps queued

    async def publish(self, account: str, led: AccountLedger, now: float, ok: bool) -> None:
        """Build the account's fragment, save the state, publish (unless held back), set lag."""
        st = self._accounts.state(account)
        fresh = ok or led.dirty or st.stale  # a reload's view shown
        fragment, built = await on_worker(self._build_step, account, led, now)
        saved = await self._saved(built)
        # Without any snapshot on disk a restart starts afresh (a clean counter
        # reset), so there is nothing to protect by holding counters back.
        if fresh and (saved or not self.file.on_disk):
            key = StoreKey("traffic", account)
            self.store.publish(key, fragment, max_age=FRAGMENT_MAX_AGE_SECONDS)
            self._zeros_published(led)
        elif led.unpublished or led.unpublished_late:
            # Held back: the keys it put at 0 have not appeared; the fragment published
            # next shows them at 0 first, then only what follows.
            led.drop_unpublished()
            self._accounts.state(account).stale = True
        if led.cursor is not None:
            age = self._platform_time(now) - (led.cursor + MINUTE)
            self._metrics.traffic_lag.labels(account).set(age)

    def _build_step(self, account: str, led: AccountLedger, now: float) -> tuple[Fragment, int]:
        """The account's fragment built (a worker step), and the number of this build."""
        fragment = self.build(account, led, now)
        if led.dirty:
            led.dirty = False
            self.file.unsaved = True
        self._built += 1
        return fragment, self._built

    async def _saved(self, built: int) -> bool:
        """Whether the state on disk holds what build number ``built`` showed, after a save
        that began after that build (one at a time: publishes built before the queued save
        began share it; it snapshots every ledger). Saved first: a value Prometheus scraped
        is always on disk, so a restart never publishes a counter lower than before."""
        if not self.file.path:
            return True
        while self._covered < built:
            if self._saving is None:
                self._saving = untied_task(self._save())  # every account's: its lines name none
            if not await asyncio.shield(self._saving):
                return False  # unsaved counters wait
        return True

    async def _save(self) -> bool:
        try:
            return await on_worker(self._save_step)
        finally:
            self._saving = None

    def _save_step(self) -> bool:
        """The state file saved if a build since the last save changed it (a worker step);
        on success it holds every build done before this step began."""
        built = self._built
        if self.file.unsaved:
            self.file.unsaved = False
            if not self._write():
                self.file.unsaved = True
                return False
        self._covered = built
        return True

    def _zeros_published(self, led: AccountLedger) -> None:
        """The fragment just put in the store shows the keys ``led`` holds at 0: a scrape
        answered at this sequence or later has seen them at 0."""
        led.published()
        if led.unshown and led.zero_seq < 0:
            led.zero_seq = self.store.sequence

    def _served(self, led: AccountLedger) -> bool:
        """Whether a scrape was answered with every key ``led`` holds at 0 (they show their
        values from the next build on). Also before this process's first scrape: a key new
        in this process is new to Prometheus, which must read its 0 before its count."""
        served = self.store.served
        return 0 <= led.zero_seq <= served

    def build(self, account: str, led: AccountLedger, now: float) -> Fragment:
        """The account's fragment, rebuilt when its counters changed or a scrape has seen
        the keys it holds at 0 (series not seen for ``series_retention_hours`` are removed
        first)."""
        st = self._accounts.state(account)
        served = self._served(led)
        if led.dirty or (led.unshown and served) or st.fragment is None or st.stale:
            oldest = now - self._settings.series_retention_hours * 3600
            gone = led.prune(oldest)
            if gone:
                log.info(
                    "traffic_series_removed", resources=len(gone)
                )  # the poll names the account
            # built, rendered and compressed here, not in the render thread, against the
            # fragment it replaces (unchanged chunks and label tuples are kept)
            published = self.store.fragment(StoreKey("traffic", account), include_stale=True)
            previous = st.fragment or published
            fragment = build_fragment(account, led, st.latest, self._view, previous, served)
            fragment.packed(previous)
            st.fragment, st.stale = fragment, False
        return st.fragment

    def reselect(self) -> None:
        """Take the store's family selection anew (a config reload changed it); the next
        fragment of each account is built with it (``republish`` builds them now). Counts of
        keys it newly exports start at 0 (``exposure``): on the worker, after the steps queued
        before, so no fragment shows them with what was counted while they were left out.
        The zeroing marks no ledger dirty: ``_rebuild`` refuses a dirty one (counts not yet
        saved), and a state file saved before it lists these keys as not exported, so a
        restart starts them at 0 as well. The step is queued at once and awaited by
        ``republish``, which raises its error."""
        s = self._settings
        view = View.of(self.store.selection, s.resource_status_codes, s.resource_request_times)
        shown = exposure.newly(exported_keys(self._selected), exported_keys(view))
        self._selected = view  # the view the worker takes next (two reloads in a row)

        def step() -> None:
            for _, st in self._accounts.items():  # a copy: the loop may add one meanwhile
                exposure.start_at_zero(st.ledger, shown)
                st.stale = True  # the last fragment stays what the rebuild starts from
            self._view = view

        self._reselected.append(offloop.queued(step))  # ``republish`` awaits it

    async def republish(self) -> int:
        """Rebuild each account's published fragment with the view in force, at once (after
        a reload changed the selection), keeping its publication time; returns how many.

        Left to their next poll: an account whose poll runs now (it builds with the new view
        when it publishes), and counters not yet saved (never published before the state
        file holds them). Raises the error of a ``reselect`` step queued before."""
        done = 0
        for account, st in self._accounts.items():
            key = StoreKey("traffic", account)
            if st.lock.locked() or st.fragment is None or self.store.fragment(key) is None:
                continue
            if self.file.unsaved and self.file.path:
                continue
            fragment = await on_worker(self._rebuild, account, st)
            if fragment is not None and self.store.replace(key, fragment):
                self._zeros_published(st.ledger)
                done += 1
        while self._reselected:  # done by now (queued first): an error of one is raised here
            await self._reselected.pop(0)
        return done

    def _rebuild(self, account: str, st: AccountState) -> Fragment | None:
        """``st``'s fragment built anew from what it showed (on the worker, after the steps
        queued before it); None when a step since counted something not yet published."""
        led = st.ledger
        if led.dirty or st.fragment is None:
            return None
        fragment = build_fragment(
            account, led, st.latest, self._view, st.fragment, self._served(led)
        )
        fragment.packed(st.fragment)
        st.fragment, st.stale = fragment, False
        return fragment

    async def save_state(self) -> None:
        """Write the state file now, after the steps already queued on the worker; a failure
        is logged, not raised."""
        if self.file.path:
            await offloop.off_loop(self.save_now)

    def save_now(self) -> None:
        """Write the state file now, whatever the builds since the last save (on the worker
        thread; at shutdown, ``TrafficArea.stop``); a failure is logged, not raised."""
        if self.file.path and self._write():
            self.file.unsaved = False

    def _write(self) -> bool:
        """Snapshot every ledger and replace the state file (on the worker thread)."""
        ledgers = {name: st.ledger for name, st in self._accounts.items()}
        return self.file.write(ledgers, exported_keys(self._view))
