"""Shift this process's wall clock by the offset in $RELIABILITY_CLOCK_FILE (tests only).

Put this directory on PYTHONPATH of an exporter process: ``time.time`` (and so the
exporter's SystemClock) and ``datetime.now`` (and so APScheduler's idea of now) then read
real time plus the offset the simulator process (``simproc.py --clock-file``) keeps in that
file, like libfaketime's timestamp file. Both must move together: the scheduler lays its grid
out on ``time.time`` and APScheduler compares it with ``datetime.now``, so a clock shifted in
one alone puts every run months in the past and the daemon polls back to back. Monotonic
time, and so every timeout, is left alone.
"""

from __future__ import annotations

import os

_PATH = os.environ.get("RELIABILITY_CLOCK_FILE")
if _PATH:
    import datetime as _datetime
    import mmap
    import struct
    import time

    _real = time.time
    with open(_PATH, "r+b") as _fh:
        _map = mmap.mmap(_fh.fileno(), 8)

    def _shifted() -> float:
        return _real() + float(struct.unpack("d", _map[:8])[0])

    time.time = _shifted

    class _ShiftedDatetime(_datetime.datetime):
        """``datetime`` whose ``now`` reads the shifted clock (installed before any module
        imports ``from datetime import datetime``)."""

        @classmethod
        def now(cls, tz: _datetime.tzinfo | None = None) -> _datetime.datetime:
            return _datetime.datetime.fromtimestamp(_shifted(), tz)

        @classmethod
        def utcnow(cls) -> _datetime.datetime:
            return _datetime.datetime.fromtimestamp(_shifted(), _datetime.UTC).replace(tzinfo=None)

    _datetime.datetime = _ShiftedDatetime  # type: ignore[misc]
