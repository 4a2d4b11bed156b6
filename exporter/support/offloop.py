"""One worker thread for a refresh's work off the event loop.

Decoding and parsing replies, counting traffic, building fragments and rendering them is
Python work: it holds the GIL, and each thread that wants the GIL competes with the event loop
for it. Spread over asyncio's default executor (up to six threads) and the traffic poller's
own thread, a refresh at 5,000 resources had up to five threads computing at once beside the
loop. On one thread, in-process, six alternating pairs of 12 refreshes each: process CPU
12.4-14.6 s (mean 13.8) against 14.0-17.1 s (mean 15.1), fewer forced switches between
computing threads; worst loop lag 18-38 ms (mean 27) against 27-39 ms (mean 32); polls
0.94-1.11 s against 1.03-1.21 s (docs/performance.md, optimisation 20).

Steps run one at a time in the order submitted, so the traffic poller's steps keep their
order. A request handler's own work (a scrape's plain text, a password check, an admin
reply's decoding) stays on asyncio's default executor: it never waits behind a refresh.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")

WORKER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="refresh")


async def off_loop(step: Callable[..., T], *args: object) -> T:
    """``step(*args)`` on the refresh thread, after the steps submitted before it."""
    return await asyncio.get_running_loop().run_in_executor(WORKER, step, *args)
