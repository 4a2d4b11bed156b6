"""One log record, one line: control characters in rendered values escaped.

A request path, a header or a platform reply can carry ``%0D``, ``%0A``, an ANSI escape or a
Unicode line separator; written raw into a logfmt or console line, it splits the record (a
line splitter reads a forged second one) or drives the terminal. ``escape_controls`` is a
structlog processor run last before those renderers: every key and every text value has CR
(``\\r``), LF (``\\n``), tab (``\\t``), the other C0 and C1 controls and DEL (``\\x1b``,
``\\x85``...) and U+2028/U+2029 (``\\u2028``) written as escapes. The JSON renderer needs
none of it (JSON escapes them itself).

On the console a traceback keeps its line breaks (``keep_exception_lines``): it is written
for a person, and every other control character in it is escaped still.
"""

from __future__ import annotations

import re
from collections.abc import MutableMapping
from typing import Any

# C0 controls, DEL, C1 controls, and the Unicode line and paragraph separators.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_CONTROL_BUT_LF = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029]")
_NAMED = {"\r": "\\r", "\n": "\\n", "\t": "\\t"}


def _escape(m: re.Match[str]) -> str:
    c = m.group(0)
    named = _NAMED.get(c)
    if named is not None:
        return named
    return f"\\x{ord(c):02x}" if ord(c) <= 0xFF else f"\\u{ord(c):04x}"


def escape_text(text: str, keep_lf: bool = False) -> str:
    """``text`` with every control character and line separator written as an escape."""
    pattern = _CONTROL_BUT_LF if keep_lf else _CONTROL
    return pattern.sub(_escape, text) if pattern.search(text) else text


def _item(value: Any) -> Any:
    """One item of a list value: text escaped, numbers and None as they are."""
    if value is None or isinstance(value, bool | int | float):
        return value
    return escape_text(str(value))


class EscapeControls:
    """The structlog processor: keys and text values escaped (others rendered as text first,
    so an exception or a repr cannot carry a raw line break either)."""

    def __init__(self, keep_exception_lines: bool = False) -> None:
        self.keep_exception_lines = keep_exception_lines

    def __call__(
        self, logger: Any, method: str, event: MutableMapping[str, Any]
    ) -> MutableMapping[str, Any]:
        out: dict[str, Any] = {}
        for key, value in event.items():
            if isinstance(value, str):
                keep = self.keep_exception_lines and key == "exception"
                value = escape_text(value, keep_lf=keep)
            elif isinstance(value, list | tuple | set | frozenset):
                value = [_item(v) for v in value]  # still a list: renderers join lists
            elif not (value is None or isinstance(value, bool | int | float)):
                value = escape_text(str(value))
            out[escape_text(str(key))] = value
        event.clear()
        event.update(out)
        return event
