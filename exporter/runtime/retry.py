"""When a failed poll is tried again: exponential back-off that never costs more than the
job's regular runs (the scheduler applies it; docs/configuration.md counts it)."""

from __future__ import annotations

# A failed (or postponed) poll is tried again this long after it ended, then twice as long
# after each further failure, plus up to RETRY_JITTER of the wait; a retry that would fall at
# or after the job's next regular run is not made (the regular run is the retry).
RETRY_FIRST_SECONDS = 30.0
RETRY_JITTER = 0.2


def retry_delay(failures: int, fraction: float) -> float:
    """The wait before the retry after ``failures`` consecutive failures (1 or more), with
    ``fraction`` in [0, 1) of the jitter: 30 s, 60 s, 120 s, ... each up to 20% longer."""
    return RETRY_FIRST_SECONDS * float(2 ** (failures - 1)) * (1 + RETRY_JITTER * fraction)


def retries_per_outage(interval: float) -> int:
    """The most retries one outage adds to a job of ``interval`` seconds: the back-off steps
    (without jitter) that end before the next regular run. After them the wait is longer
    than the interval, so an outage that lasts costs no more than the regular runs."""
    spent, n = 0.0, 0
    while (spent := spent + retry_delay(n + 1, 0.0)) < interval:
        n += 1
    return n
