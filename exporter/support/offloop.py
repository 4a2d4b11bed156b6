"""Every crossing from the event loop to a thread, awaited, on one of two lanes.

The refresh lane (``WORKER``, ``off_loop``, ``queued``): one thread for a refresh's work.
Decoding and parsing replies, counting traffic, building fragments and rendering them is
Python work: it holds the GIL, and each thread that wants the GIL competes with the event loop
for it. Spread over asyncio's default executor and the traffic poller's own thread, a refresh
had several threads computing at once beside the loop; on one thread there are fewer forced
switches between computing threads, and less CPU and loop lag. See
docs/performance.md#one-thread-for-a-refreshs-work. Steps run one at a time in the order
submitted, so the traffic poller's steps keep their order.

The request lane (``aside``): a request's own work (a scrape's plain text, a password check,
an admin reply's decoding, a remote-write body, a config file read) runs on asyncio's default
executor, so it never waits behind a refresh queued on the refresh thread.

docs/dev/architecture.md (*Threads: two lanes and the deflate pool*) says what runs where.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")

WORKER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="refresh")


def queued(step: Callable[..., T], *args: object) -> asyncio.Future[T]:
    """``step(*args)`` queued on the refresh thread now, after the steps submitted before it:
    the future to await for its result (or its error)."""
    return asyncio.get_running_loop().run_in_executor(WORKER, step, *args)


async def off_loop(step: Callable[..., T], *args: object) -> T:
    """``step(*args)`` on the refresh thread, after the steps submitted before it."""
    return await queued(step, *args)


async def aside(work: Callable[..., T], *args: object) -> T:
    """``work(*args)`` on the request lane (asyncio's default executor, in the caller's
    context): beside the refresh thread, never queued behind a refresh."""
    return await asyncio.to_thread(work, *args)
