"""The platform's clock as the traffic poller believes it: a skew measured from the `Date`
header of metrics replies is believed only once several consecutive replies agree."""

from __future__ import annotations

import statistics
from collections import deque
from dataclasses import dataclass, field
from typing import Literal

# A reading this close to the believed skew agrees with it (the Date header has whole seconds).
SKEW_TOLERANCE_SECONDS = 5.0
# A new skew is believed once this many consecutive readings lie within SKEW_AGREEMENT_SECONDS
# of each other (a single reply with a wrong Date, from a proxy or a node, changes nothing).
SKEW_CONFIRMATIONS = 3
SKEW_AGREEMENT_SECONDS = 2.0
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
