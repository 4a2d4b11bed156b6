"""Shift this process's wall clock by the offset in $RELIABILITY_CLOCK_FILE (tests only).

Put this directory on PYTHONPATH of an exporter process: ``time.time`` (and so the
exporter's SystemClock) then reads real time plus the offset the simulator process
(``simproc.py --clock-file``) keeps in that file, like libfaketime's timestamp file.
Monotonic time, and so every timeout and the scheduler, is left alone.
"""

from __future__ import annotations

import os

_PATH = os.environ.get("RELIABILITY_CLOCK_FILE")
if _PATH:
    import mmap
    import struct
    import time

    _real = time.time
    with open(_PATH, "r+b") as _fh:
        _map = mmap.mmap(_fh.fileno(), 8)

    def _shifted() -> float:
        return _real() + float(struct.unpack("d", _map[:8])[0])

    time.time = _shifted
