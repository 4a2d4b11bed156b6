"""Reliability fixtures: the leak guard every test runs under (secrets in any output fail)."""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import pytest
import structlog

from .leaks import SESSION, LeakGuard


@pytest.fixture(autouse=True)
def leak_guard() -> Iterator[LeakGuard]:
    """Every reliability test: logs (structlog and stdlib, as the daemon configures them),
    scraped /metrics bodies, admin responses and CLI output are scanned at the end for the
    secrets planted in the simulator (all contain ``SECRET``) and in the config, and for every
    token the exporter sent upstream. Any hit fails the test."""
    guard = LeakGuard(io.StringIO())
    yield guard
    structlog.reset_defaults()
    root = logging.getLogger()
    for handler in [h for h in root.handlers if type(h).__name__ == "_StdlibHandler"]:
        root.removeHandler(handler)
    hits = guard.scan()
    SESSION.record(guard)
    if hits:
        pytest.fail("secret leaked:\n" + "\n".join(hits), pytrace=False)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if SESSION.tests:
        terminalreporter.write_line(SESSION.summary())
