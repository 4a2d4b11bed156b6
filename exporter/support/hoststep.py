"""Steps of the host's wall clock (an NTP step, a VM resumed), seen against its monotonic
clock before anything is planned on the stepped clock: time is the wall clock before the step
plus the monotonic time since."""

from __future__ import annotations

from dataclasses import dataclass

# The wall clock moved this much more (or less) than the monotonic clock between two polls:
# a step. Below it: slewing and drift, which the platform's clock readings follow anyway.
HOST_STEP_TOLERANCE_SECONDS = 2.0


@dataclass
class HostClockWatch:
    """Wall and monotonic readings in; ``correction`` out: what to add to the wall clock to
    undo its steps (0 = none seen)."""

    correction: float = 0.0
    _wall: float | None = None
    _mono: float = 0.0

    def observe(self, wall: float, mono: float) -> float:
        """Take a reading of both clocks; returns the step seen since the last reading
        (seconds, positive forward; 0 = none)."""
        step = 0.0
        if self._wall is not None:
            moved = (wall - self._wall) - (mono - self._mono)
            if abs(moved) > HOST_STEP_TOLERANCE_SECONDS:
                step = moved
                self.correction -= moved
        self._wall, self._mono = wall, mono
        return step
