"""structlog set-up: console or JSON output, and a processor that masks every secret.

Context bound with ``structlog.contextvars`` is merged into every line (``context_first``).
A poll binds its ``account`` once, with ``bound_contextvars`` around its own work after its
upstream requests: each asyncio task has its own copy of the context, so concurrent polls of
two accounts never see each other's, and the upstream client's lines (a retry, the renewal of
the token every account shares) keep the fields they state themselves.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import sys
import threading
from collections.abc import Iterable, MutableMapping
from typing import Any, TextIO

import structlog
from structlog.typing import EventDict

from exporter.support import logfmt
from exporter.support.logescape import EscapeControls
from exporter.support.secrets import MASK, is_secret_key, plain_mask, secret_name_pattern
from exporter.support.urls import mask_urls, unchanged

__all__ = [
    "MASK",
    "Redactor",
    "configure_logging",
    "context_first",
    "is_secret_key",
    "strip_userinfo",
]

# The bound keys, in the order a line puts them (before the line's own fields).
CONTEXT_ORDER = ("area", "account")

_NAME = secret_name_pattern()
_VALUE = (
    r"(?:(?P<q>[\"'])(?P<quoted>(?:\\.|(?!(?P=q)).)*)(?P=q)"
    r"|(?P<bare>(?:bearer\s+|basic\s+)?[^\s\"'&,;)}\]]+))"
)
# Secrets inside free text: form bodies and query strings (password=x&...), reprs
# (password='x'), JSON or dict text ("token": "x"), and HTTP header lines.
_KEY_VALUE = re.compile(
    rf"(?i)(?P<key>(?:\b{_NAME}\s*=\s*)"
    rf"|(?:[\"']{_NAME}[\"']\s*:\s*)"
    r"|(?:\b(?:authorization|cdn-auth-token)\s*:\s*))" + _VALUE
)


def _fits(secret: object) -> bool:
    return isinstance(secret, str) and _ANCHOR <= len(secret) <= MAX_SECRET_LENGTH


def strip_userinfo(text: str) -> str:
    """Remove ``user:password@`` from every URL inside ``text`` (RFC 3986's userinfo)."""
    return mask_urls(text, unchanged, strip_userinfo=True)


def _mask_key_values(text: str) -> str:
    def sub(m: re.Match[str]) -> str:
        q = m.group("q")
        return m.group("key") + (f"{q}{MASK}{q}" if q else MASK)

    return _KEY_VALUE.sub(sub, text)


# Log fields that give an event its shape (names, identifiers, outcomes): secrets learned
# from platform data are never substituted in them, so a platform value that happens to equal
# an account name or a role word cannot erase the audit trail. Credentials, URL secrets and
# ``key=value`` pairs are still masked there. Every other field is free text.
STRUCTURAL_KEYS = frozenset(
    {
        "event",
        "operation",
        "route",
        "remote",
        "level",
        "timestamp",
        "logger",
        "account",
        "role",
        "target",
        "outcome",
        "area",
        "status",
        "upstream_status",
    }
)
MAX_LEARNED_SECRETS = 4096
MAX_CREDENTIALS = 256
MAX_SECRET_LENGTH = 512
_ANCHOR = 3  # secrets are found by their first characters; shorter ones are not kept


class _Bucket:
    """Known secrets that start with the same characters, as one set per length.

    Finding one at a position costs a set lookup per distinct length (longest first), however
    many secrets share the start. Updates happen under the redactor's lock; a reader sees the
    ``lengths`` tuple before or after a change, never half of one.
    """

    def __init__(self) -> None:
        self.lengths: tuple[int, ...] = ()
        self.by_length: dict[int, set[str]] = {}

    def add(self, secret: str) -> None:
        same = self.by_length.get(len(secret))
        if same is None:
            self.by_length[len(secret)] = {secret}
            self.lengths = tuple(sorted(self.by_length, reverse=True))
        else:
            same.add(secret)

    def discard(self, secret: str) -> bool:
        """Forget ``secret``; True when the bucket is empty now."""
        same = self.by_length.get(len(secret))
        if same is not None:
            same.discard(secret)
            if not same:
                del self.by_length[len(secret)]
                self.lengths = tuple(sorted(self.by_length, reverse=True))
        return not self.by_length

    def match(self, text: str, at: int) -> int:
        """The length of the longest known secret at ``text[at:]``; 0 when none."""
        for length in self.lengths:
            same = self.by_length.get(length)
            if same is not None and text[at : at + length] in same:
                return length
        return 0


class Redactor:
    """Masks known secret values and secret-named keys; learns new secrets at run time.

    Two kinds of known values: credentials (the config's, kept for good, and tokens the
    exporter fetched, ``add``) and secrets learned from platform data (stream keys, target
    passwords, ``learn``). Learned secrets are capped at ``MAX_LEARNED_SECRETS``, fetched
    tokens at ``MAX_CREDENTIALS`` (the least recently seen go first), every value at
    ``MAX_SECRET_LENGTH`` characters (a longer one is masked by its field name only).
    Matching indexes values by their first three characters, so learning one is a dict
    update and never rebuilds a pattern. Thread-safe: updates hold a lock and replace the
    per-prefix tuples, never mutate them.
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._lock = threading.Lock()
        self._fixed = frozenset(s for s in secrets if _fits(s))
        self._credentials: dict[str, None] = {}  # insertion order = least recently seen first
        self._learned: dict[str, None] = {}
        self._index: dict[str, _Bucket] = {}  # first characters -> secrets starting so
        for secret in self._fixed:
            self._index_add(secret)

    def __len__(self) -> int:
        return len(self._fixed) + len(self._credentials) + len(self._learned)

    def add(self, *secrets: str) -> None:
        """Remember credentials: a token fetched from the platform. Masked everywhere."""
        self._remember(secrets, self._credentials, MAX_CREDENTIALS)

    def learn(self, *secrets: str) -> None:
        """Remember secrets of platform data (a restream password, a stream key)."""
        self._remember(secrets, self._learned, MAX_LEARNED_SECRETS)

    def _remember(self, secrets: Iterable[str], kept: dict[str, None], cap: int) -> None:
        fresh = [s for s in secrets if _fits(s) and s not in self._fixed]
        if not fresh:
            return
        with self._lock:
            for secret in fresh:
                if secret in kept:
                    del kept[secret]  # seen again: the most recent now
                else:
                    self._index_add(secret)
                kept[secret] = None
            while len(kept) > cap:
                oldest = next(iter(kept))
                del kept[oldest]
                self._index_remove(oldest)

    def _is_credential(self, secret: str) -> bool:
        return secret in self._fixed or secret in self._credentials

    def _index_add(self, secret: str) -> None:
        bucket = self._index.get(secret[:_ANCHOR])
        if bucket is None:
            bucket = self._index[secret[:_ANCHOR]] = _Bucket()
        bucket.add(secret)

    def _index_remove(self, secret: str) -> None:
        if secret in self._fixed or secret in self._credentials or secret in self._learned:
            return  # still known as the other kind
        bucket = self._index.get(secret[:_ANCHOR])
        if bucket is not None and bucket.discard(secret):
            del self._index[secret[:_ANCHOR]]

    def _known(self, text: str, learned: bool = True) -> str:
        """``text`` with every known secret replaced by the mask (leftmost, longest first)."""
        index = self._index
        if not index or len(text) < _ANCHOR:
            return text
        get = index.get
        out: list[str] = []
        last = 0
        for i in range(len(text) - _ANCHOR + 1):
            if i < last:
                continue
            bucket = get(text[i : i + _ANCHOR])
            if bucket is None:
                continue
            found = bucket.match(text, i)
            if found and (learned or self._is_credential(text[i : i + found])):
                out.append(text[last:i])
                out.append(MASK)
                last = i + found
        if not out:
            return text
        out.append(text[last:])
        return "".join(out)

    def text(self, value: str, learned: bool = True) -> str:
        """``value`` with known secrets, URL userinfo and ``key=secret`` pairs masked.

        ``learned=False`` masks credentials only, not secrets learned from platform data
        (for the structural fields of an event, which data must not be able to erase).
        """
        text = mask_urls(self._known(value, learned), plain_mask, strip_userinfo=True)
        return _mask_key_values(text)

    def value(self, value: Any, key: str = "") -> Any:
        """A copy of ``value`` safe to log: containers are walked, other objects become text."""
        if value is None or isinstance(value, bool):
            return value
        if key and is_secret_key(key) and value not in ("", b""):
            return MASK
        if isinstance(value, int | float):
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, bytes | bytearray):
            return self.text(bytes(value).decode("utf-8", "replace"))
        if isinstance(value, dict):
            return {k: self.value(v, str(k)) for k, v in value.items()}
        if isinstance(value, list | tuple | set | frozenset):
            return [self.value(v) for v in value]
        if isinstance(value, BaseException):
            return self.text(f"{type(value).__name__}: {value}")
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            # A model such as a restream entry: mask its secret fields by name.
            fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
            return {"type": type(value).__name__, **self.value(fields)}
        return self.text(repr(value))  # the renderer would repr it unredacted

    def __call__(
        self, logger: Any, method: str, event: MutableMapping[str, Any]
    ) -> MutableMapping[str, Any]:
        """structlog processor."""
        for key in list(event):
            value = event[key]
            if key in STRUCTURAL_KEYS and isinstance(value, str):
                event[key] = self.text(value, learned=False)
            else:
                event[key] = self.value(value, key)
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


class _StdlibHandler(logging.StreamHandler[TextIO]):
    """Marks the root handler configure_logging installed, so a second call replaces it."""


# ``--log.level warn`` as the Prometheus tools spell it.
LEVEL_ALIASES = {"warn": "warning"}


def context_first(_: Any, __: str, event_dict: EventDict) -> EventDict:
    """``merge_contextvars``, with the bound keys first, in ``CONTEXT_ORDER``: a line reads as
    it did when each call passed them first (``merge_contextvars`` appends them, in the order
    their variables were made). A key the call gives itself keeps its value and place."""
    bound = structlog.contextvars.get_contextvars()
    if not bound:
        return event_dict
    rank = {key: i for i, key in enumerate(CONTEXT_ORDER)}
    keys = sorted((k for k in bound if k not in event_dict), key=lambda k: rank.get(k, len(rank)))
    return {**{k: bound[k] for k in keys}, **event_dict}


def configure_logging(
    level: str = "info",
    fmt: str = "auto",
    redactor: Redactor | None = None,
    stream: TextIO | None = None,
) -> Redactor:
    """Set up structlog for the process; returns the redactor so callers can teach it secrets.

    Records of standard-library loggers (aiohttp, asyncio, APScheduler) go through the same
    redaction and renderer, so every line the process writes has one format and no secret.
    """
    redactor = redactor or Redactor()
    stream = stream or sys.stderr
    if fmt == "auto":
        fmt = "console" if stream.isatty() else "json"
    renderer: Any
    if fmt == "console":
        renderer = structlog.dev.ConsoleRenderer(colors=stream.isatty())
    elif fmt == "logfmt":  # ts, level, msg, caller first, as the Prometheus tools write
        renderer = logfmt.render
    else:  # the same keys as logfmt: ts, level, msg, caller first
        renderer = logfmt.render_json
    # One record, one line: logfmt and console get control characters escaped (JSON escapes
    # them itself); the console keeps a traceback's line breaks for the person reading it.
    escape: list[Any] = [] if fmt == "json" else [EscapeControls(fmt == "console")]
    numeric_level = logging.getLevelNamesMapping()[LEVEL_ALIASES.get(level, level).upper()]
    timestamper = structlog.processors.TimeStamper(fmt="iso", utc=True)
    caller: list[Any] = [logfmt.callsite()] if fmt in ("logfmt", "json") else []
    structlog.configure(
        processors=[
            context_first,
            structlog.processors.add_log_level,
            timestamper,
            *caller,
            _format_exc_redacted(redactor),
            redactor,
            *escape,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric_level),
        logger_factory=structlog.PrintLoggerFactory(file=stream),
        cache_logger_on_first_use=False,
    )
    handler = _StdlibHandler(stream)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=[
                context_first,
                structlog.stdlib.add_log_level,
                structlog.stdlib.add_logger_name,
                timestamper,
                *caller,
            ],
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                _format_exc_redacted(redactor),
                redactor,
                *escape,
                renderer,
            ],
        )
    )
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, _StdlibHandler)]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(numeric_level)
    # APScheduler says every job added and run at INFO, and its warnings (a run missed, a run
    # skipped while the last still runs) are the scheduler's own job_missed and
    # job_still_running lines: only its errors are worth a line of their own.
    logging.getLogger("apscheduler").setLevel(max(numeric_level, logging.ERROR))
    return redactor
