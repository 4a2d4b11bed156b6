"""A traffic poll's steps on the refresh thread: one at a time, in the order submitted."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

from exporter.support import offloop

T = TypeVar("T")


async def on_worker(step: Callable[..., T], *args: object) -> T:
    """``step(*args)`` on the refresh thread (after the steps queued before it)."""
    return await asyncio.get_running_loop().run_in_executor(offloop.WORKER, step, *args)
