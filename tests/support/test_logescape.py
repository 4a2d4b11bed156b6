"""Every rendered logfmt and console value is one line: controls and separators escaped."""

from __future__ import annotations

import io

import structlog

from exporter.support.logescape import EscapeControls, escape_text
from exporter.support.logs import configure_logging


def test_each_control_is_written_as_an_escape() -> None:
    text = "a\rb\nc\td\x1be\x00f\x7fg\x85h\u2028i\u2029j"
    assert escape_text(text) == "a\\rb\\nc\\td\\x1be\\x00f\\x7fg\\x85h\\u2028i\\u2029j"
    assert escape_text("plain: é ü ✓") == "plain: é ü ✓"


def test_keys_and_values_of_any_type_are_escaped() -> None:
    event = {"event": "x", "k\ney": 1, "error": ValueError("a\rb"), "n": None, "ok": True}
    out = EscapeControls()(None, "info", event)
    assert out == {"event": "x", "k\\ney": 1, "error": "a\\rb", "n": None, "ok": True}


def test_the_console_keeps_a_tracebacks_line_breaks_only() -> None:
    out = EscapeControls(keep_exception_lines=True)(
        None, "info", {"event": "e\nf", "exception": "Traceback\n  line\x1b[31m"}
    )
    assert out == {"event": "e\\nf", "exception": "Traceback\n  line\\x1b[31m"}


def test_console_lines_cannot_be_split() -> None:
    stream = io.StringIO()
    configure_logging("info", "console", stream=stream)
    try:
        structlog.get_logger("t").info("request", path="/a\r\nb\x1b[2J\u2028c")
    finally:
        structlog.reset_defaults()
    written = stream.getvalue()
    assert written.count("\n") == 1
    for raw in ("\x1b", "\r", "\u2028"):
        assert raw not in written
    assert "/a\\r\\nb\\x1b[2J\\u2028c" in written
