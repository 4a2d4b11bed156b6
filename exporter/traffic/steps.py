"""A traffic poll's steps: on the refresh thread one at a time in the order submitted, and
in the poll's log context (the account, bound once per poll with ``bound_contextvars``)."""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import structlog

from exporter.support import offloop

T = TypeVar("T")


def untied() -> contextvars.Context:
    """The current context without the poll's account: for what the poll does on behalf of
    every account (requests, the platform's clock, the state file), whose lines name none."""
    ctx = contextvars.copy_context()
    ctx.run(structlog.contextvars.unbind_contextvars, "account")
    return ctx


def untied_task(coro: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
    """``coro`` as a task in the ``untied`` context."""
    return asyncio.get_running_loop().create_task(coro, context=untied())


async def on_worker(step: Callable[..., T], *args: object) -> T:
    """``step(*args)`` on the refresh thread (after the steps queued before it), in the
    poll's log context."""
    return await offloop.off_loop(contextvars.copy_context().run, step, *args)
