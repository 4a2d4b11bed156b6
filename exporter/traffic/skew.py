"""The platform's clock as the traffic poller believes it: a skew measured from the `Date`
header of metrics replies is believed only once several consecutive replies agree."""

from __future__ import annotations

import math
import statistics
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Literal

import structlog

from exporter.areakit.metrics import AreaMetrics
from exporter.support.clock import Clock
from exporter.support.hoststep import HostClockWatch

log = structlog.get_logger("exporter.traffic")

# A reading this close to the believed skew agrees with it (the Date header has whole seconds).
SKEW_TOLERANCE_SECONDS = 5.0
# A new skew is believed once this many consecutive readings lie within SKEW_AGREEMENT_SECONDS
# of each other (a single reply with a wrong Date, from a proxy or a node, changes nothing).
SKEW_CONFIRMATIONS = 3
SKEW_AGREEMENT_SECONDS = 2.0
# A rejected clock reading is logged at most once in this many seconds (always counted).
CLOCK_REJECTED_LOG_SECONDS = 60.0
# The platform's confirmed clock is followed either way, however far: minutes are read when
# they close on its clock (a host clock behind keeps counting, one ahead never reads early).

Outcome = Literal["agrees", "moved", "rejected", "pending"]


@dataclass
class PlatformClock:
    """Readings in, the believed skew out (the platform's clock minus ours, 0 = ours)."""

    believed: float = 0.0
    known: bool = False  # some SKEW_CONFIRMATIONS readings have agreed since the start
    recent: deque[float] = field(default_factory=lambda: deque(maxlen=SKEW_CONFIRMATIONS))

    def observe(self, reading: float) -> Outcome:
        """Take one reply's reading. ``moved``: a new skew is believed (or none any more);
        ``agrees``: it agrees with the believed one; ``rejected``: it does not, and the
        readings around it do not agree with it either (an outlier); ``pending``: the first
        readings since the start, not yet enough to believe any."""
        self.recent.append(reading)
        if self.known and abs(reading - self.believed) <= SKEW_TOLERANCE_SECONDS:
            return "agrees"
        confirmed = (
            len(self.recent) == SKEW_CONFIRMATIONS
            and max(self.recent) - min(self.recent) <= SKEW_AGREEMENT_SECONDS
        )
        if not confirmed:
            return "rejected" if self.known else "pending"
        new = statistics.median(self.recent)
        new = new if abs(new) > SKEW_TOLERANCE_SECONDS else 0.0
        was_known, self.known = self.known, True
        moved = new != self.believed
        self.believed = new
        return "moved" if moved or not was_known else "agrees"

    def ready_skew(self) -> float:
        """The skew that decides which minutes are ready: the believed one once a skew is
        confirmed; before that (since the start), ours or the latest readings' furthest
        behind ours, whichever is earlier. A reading ahead of ours, right or wrong, makes
        nothing ready early; one behind may be right, and waiting for it reads nothing early
        (a restart with the host's clock ahead has no step to see). A reading within
        SKEW_TOLERANCE_SECONDS agrees with ours."""
        if self.known:
            return self.believed
        behind = [r for r in self.recent if r < self.believed - SKEW_TOLERANCE_SECONDS]
        return min(behind, default=self.believed)

    def trusted(self) -> bool:
        """Windows may be planned on the ready time at full size: a skew is confirmed, or the
        latest readings all agree with ours (the platform's nodes may never agree within
        SKEW_AGREEMENT_SECONDS of each other, while all lie within the tolerance)."""
        return self.known or (
            bool(self.recent)
            and all(abs(r - self.believed) <= SKEW_TOLERANCE_SECONDS for r in self.recent)
        )

    def agrees(self, reading: float) -> bool:
        """The reading agrees with the believed skew (0 until one is confirmed)."""
        return abs(reading - self.believed) <= SKEW_TOLERANCE_SECONDS


class Clocks:
    """Our wall clock with its steps undone (``HostClockWatch``) and the platform's clock as
    the metrics replies' readings confirm it (``PlatformClock``): which minutes are ready,
    when a settle read is due, and the lag gauge are read on these. Readings are taken on
    the worker (the read step) and the clocks read on the loop: one lock keeps them whole."""

    def __init__(self, clock: Clock, metrics: AreaMetrics) -> None:
        self._clock = clock
        self._metrics = metrics
        self.platform = PlatformClock()  # the platform's clock minus ours, once confirmed
        self.host = HostClockWatch()  # our clock's steps not yet confirmed by the platform
        self.undated = False  # a metrics reply came without a Date header
        self.doubts = 0  # readings that disagreed with the believed clock (taken before/after)
        self._rejected_logged = -math.inf
        self._lock = threading.Lock()

    def now(self) -> float:
        """Our wall clock, after checking it against the monotonic clock: a step is logged
        and undone (``host_time``)."""
        now, mono = self._clock.time(), self._clock.monotonic()
        with self._lock:
            step = self.host.observe(now, mono)
        if step:
            log.warning(
                "host_clock_stepped",
                step_seconds=round(step, 1),
                action="traffic reads follow the time before the step plus the time elapsed; "
                "the platform's clock readings are measured against that",
            )
        return now

    def host_time(self, now: float) -> float:
        """``now`` (our wall clock) with its steps undone: the time before each step plus the
        monotonic time elapsed since (the platform's readings correct what that is off)."""
        with self._lock:
            return now + self.host.correction

    def platform_time(self, now: float) -> float:
        """``now`` on the platform's clock as believed (``PlatformClock``): the lag gauge."""
        with self._lock:
            return now + self.host.correction + self.platform.believed

    def ready_time(self, now: float) -> float:
        """The clock that decides which minutes are ready and which settle reads are due: the
        platform's as confirmed, however far from ours either way; until one is confirmed,
        ours or the latest readings' furthest behind it (``PlatformClock.ready_skew``)."""
        with self._lock:
            return now + self.host.correction + self.platform.ready_skew()

    def probing(self) -> bool:
        """First reads go one minute at a time: no skew is confirmed yet since the start
        and the latest readings do not all agree with ours (``PlatformClock.trusted``), and
        the replies carry a ``Date`` to confirm one with."""
        with self._lock:
            return not self.platform.trusted() and not self.undated

    def read(self, skew: float | None) -> None:
        """One answered reply's reading (None: it had no ``Date``: ours is followed)."""
        if skew is None:
            with self._lock:
                self.undated = True
        else:
            self.observe(skew)

    def observe(self, skew: float) -> None:
        """One reply's reading (the platform's clock minus our wall clock): the gauge shows it;
        the clock moves only when confirmed. Believed against our clock with its steps undone
        (``host_time``): a step the platform's clock agrees with is no doubt."""
        self._metrics.clock_skew.set(skew)
        with self._lock:
            before = self.platform.believed
            skew -= self.host.correction
            outcome = self.platform.observe(skew)
            if not self.platform.agrees(skew):
                self.doubts += 1  # a read made meanwhile is not counted (``read.Reader``)
            believed = self.platform.believed
        if outcome == "rejected":
            self._metrics.clock_readings_rejected.inc()
            now = self._clock.time()
            if now >= self._rejected_logged + CLOCK_REJECTED_LOG_SECONDS:
                self._rejected_logged = now
                log.warning(
                    "upstream_clock_reading_rejected",
                    skew_seconds=round(skew, 1),
                    believed_seconds=round(before, 1),
                    action=f"ignored until {SKEW_CONFIRMATIONS} consecutive replies agree",
                )
        elif outcome == "moved" and believed:
            log.warning(
                "upstream_clock_skew",
                skew_seconds=round(believed, 1),
                action=(
                    "traffic windows wait for the platform's clock; fix the host's time (NTP)"
                    if believed < 0
                    else "the platform's minutes close before ours; fix the host's time (NTP)"
                ),
            )
        elif outcome == "moved" and before:
            log.info("upstream_clock_skew_gone", skew_seconds=round(skew, 1))
