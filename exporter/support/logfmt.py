"""logfmt lines as the Prometheus tools write them (``--log.format logfmt``), and JSON lines
with the same keys (``--log.format json``)::

    ts=2026-01-01T17:00:05.123456Z level=info msg=exporter_started caller=cli.py:212 \
accounts=demo-media,demo-shop listen=0.0.0.0:9877

``ts``, ``level``, ``msg`` (structlog's ``event``) and ``caller`` (file:line of the call) come
first, the event's own keys after them in the order given; a JSON line has the same keys in
the same order (``{"ts": "2026-01-01T17:00:05.123456Z", "level": "info", "msg":
"exporter_started", "caller": "daemon.py:101", ...}``), so a pipeline that parses one format
finds the same names in the other. A value is quoted when it is empty
or holds a space, ``=``, ``"`` or a control character (``"`` and ``\\`` escaped, as go-logfmt
does); a list, tuple or set is one value, its items joined by commas; a bool is
``true``/``false``; ``None`` is an empty value. The level reads ``warn`` for warnings, as in
the Prometheus tools.
"""

from __future__ import annotations

import json
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


def keyed(event: Mapping[str, Any]) -> dict[str, Any]:
    """The event under the keys both machine formats write (logfmt and JSON): ``ts``,
    ``level`` (``warn``, not ``warning``), ``msg``, ``caller`` first, then the event's own keys
    in their order."""
    fields: dict[str, Any] = {}
    for key, value in event.items():
        fields[_RENAMED.get(key, key)] = value
    if "level" in fields:
        fields["level"] = _LEVELS.get(str(fields["level"]), fields["level"])
    filename, lineno = fields.pop("filename", None), fields.pop("lineno", None)
    if filename is not None:
        fields["caller"] = f"{filename}:{lineno}"
    first = {k: fields.pop(k) for k in FIRST if k in fields}
    return {**first, **fields}


def render(_: Any, __: str, event: Mapping[str, Any]) -> str:
    """The structlog renderer: one logfmt line of the event."""
    return " ".join(f"{key}={text(value)}" for key, value in keyed(event).items())


def render_json(_: Any, __: str, event: Mapping[str, Any]) -> str:
    """The structlog renderer of ``--log.format json``: one JSON object with the keys logfmt
    writes (``keyed``), a value JSON cannot hold written as its ``repr``."""
    return json.dumps(keyed(event), default=repr)
