"""structlog set-up: console or JSON output, and a processor that masks every secret."""

from __future__ import annotations

import logging
import re
import sys
import threading
from collections.abc import Iterable, MutableMapping
from typing import Any, TextIO

import structlog

MASK = "********"

# Keys whose values are secrets wherever they appear in an event (compared lower-case).
SECRET_KEYS = frozenset(
    {
        "token",
        "password",
        "passwd",
        "secret",
        "authorization",
        "cdn-auth-token",
        "cdn_auth_token",
        "target_key",
        "stream_key",
        "read_token",
        "write_token",
        "utoken",
        "access_token",
    }
)
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)[^/@\s?#]+@")


def strip_userinfo(text: str) -> str:
    """Remove ``user:password@`` from every URL inside ``text``."""
    return _USERINFO.sub(lambda m: m.group("scheme"), text)


class Redactor:
    """Masks known secret values and secret-named keys; learns new secrets at run time.

    Thread-safe: the set of secrets is replaced, never mutated in place.
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._lock = threading.Lock()
        self._secrets: frozenset[str] = frozenset()
        self._pattern: re.Pattern[str] | None = None
        self.add(*secrets)

    def add(self, *secrets: str) -> None:
        """Remember more secret values (a fetched token, a restream password, a stream key)."""
        fresh = {s for s in secrets if s and len(s) >= 3}
        if fresh <= self._secrets:
            return
        with self._lock:
            merged = self._secrets | fresh
            ordered = sorted(merged, key=len, reverse=True)
            self._pattern = re.compile("|".join(re.escape(s) for s in ordered))
            self._secrets = merged

    def text(self, value: str) -> str:
        pattern = self._pattern
        if pattern is not None:
            value = pattern.sub(MASK, value)
        return strip_userinfo(value)

    def value(self, value: Any, key: str = "") -> Any:
        if key.lower() in SECRET_KEYS and value not in (None, "", b""):
            return MASK
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, bytes):
            return self.text(value.decode("utf-8", "replace"))
        if isinstance(value, dict):
            return {k: self.value(v, str(k)) for k, v in value.items()}
        if isinstance(value, list | tuple | set | frozenset):
            return [self.value(v) for v in value]
        if isinstance(value, BaseException):
            return self.text(f"{type(value).__name__}: {value}")
        return value

    def __call__(
        self, logger: Any, method: str, event: MutableMapping[str, Any]
    ) -> MutableMapping[str, Any]:
        """structlog processor."""
        for key in list(event):
            event[key] = self.value(event[key], key)
        return event


def _format_exc_redacted(redactor: Redactor) -> Any:
    fmt = structlog.processors.format_exc_info

    def processor(
        logger: Any, method: str, event: MutableMapping[str, Any]
    ) -> MutableMapping[str, Any]:
        event = fmt(logger, method, event)
        if "exception" in event:
            event["exception"] = redactor.text(str(event["exception"]))
        return event

    return processor


def configure_logging(
    level: str = "info",
    fmt: str = "auto",
    redactor: Redactor | None = None,
    stream: TextIO | None = None,
) -> Redactor:
    """Set up structlog for the process; returns the redactor so callers can teach it secrets."""
    redactor = redactor or Redactor()
    stream = stream or sys.stderr
    if fmt == "auto":
        fmt = "console" if stream.isatty() else "json"
    renderer: Any = (
        structlog.dev.ConsoleRenderer(colors=stream.isatty())
        if fmt == "console"
        else structlog.processors.JSONRenderer()
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            _format_exc_redacted(redactor),
            redactor,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelNamesMapping()[level.upper()]
        ),
        logger_factory=structlog.PrintLoggerFactory(file=stream),
        cache_logger_on_first_use=False,
    )
    return redactor
