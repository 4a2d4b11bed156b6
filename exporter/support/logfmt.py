"""logfmt lines as the Prometheus tools write them (``--log.format logfmt``)::

    ts=2026-01-01T17:00:05.123456Z level=info msg=exporter_started caller=cli.py:212 \
accounts=demo-media,demo-shop listen=0.0.0.0:9877

``ts``, ``level``, ``msg`` (structlog's ``event``) and ``caller`` (file:line of the call) come
first, the event's own keys after them in the order given. A value is quoted when it is empty
or holds a space, ``=``, ``"`` or a control character (``"`` and ``\\`` escaped, as go-logfmt
does); a list, tuple or set is one value, its items joined by commas; a bool is
``true``/``false``; ``None`` is an empty value. The level reads ``warn`` for warnings, as in
the Prometheus tools.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import structlog

FIRST = ("ts", "level", "msg", "caller")
_RENAMED = {"timestamp": "ts", "event": "msg"}
_LEVELS = {"warning": "warn", "critical": "error", "exception": "error"}
_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def callsite() -> structlog.processors.CallsiteParameterAdder:
    """The processor that adds the caller's file name and line (for ``caller=``)."""
    params = structlog.processors.CallsiteParameter
    return structlog.processors.CallsiteParameterAdder(
        [params.FILENAME, params.LINENO], additional_ignores=["exporter.support.logs"]
    )


def text(value: Any) -> str:
    """One value as logfmt writes it (quoted when it has to be)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple | set | frozenset):
        items = sorted(value, key=str) if isinstance(value, set | frozenset) else value
        value = ",".join("" if v is None else str(v) for v in items)
    s = str(value)
    if s and not any(c in ' ="\\' or c < " " or c == "\x7f" for c in s):
        return s
    return '"' + "".join(_ESCAPES.get(c, c) for c in s) + '"'


def render(_: Any, __: str, event: Mapping[str, Any]) -> str:
    """The structlog renderer: one logfmt line of the event."""
    fields: dict[str, Any] = {}
    for key, value in event.items():
        fields[_RENAMED.get(key, key)] = value
    if "level" in fields:
        fields["level"] = _LEVELS.get(str(fields["level"]), fields["level"])
    filename, lineno = fields.pop("filename", None), fields.pop("lineno", None)
    if filename is not None:
        fields["caller"] = f"{filename}:{lineno}"
    ordered = [k for k in FIRST if k in fields] + [k for k in fields if k not in FIRST]
    return " ".join(f"{key}={text(fields[key])}" for key in ordered)
