"""structlog's ``capture_logs`` with the contextvars merged as the daemon's processors do: a
traffic poll binds its account once (``TrafficPoller.poll``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import structlog
from structlog.typing import EventDict


@contextmanager
def capture_logs() -> Iterator[list[EventDict]]:
    """The lines logged meanwhile, each with the context bound where it was logged."""
    with structlog.testing.capture_logs(
        processors=[structlog.contextvars.merge_contextvars]
    ) as logs:
        yield logs
