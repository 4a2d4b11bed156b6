"""``--log.format logfmt`` writes what the Prometheus tools write: ts, level, msg, caller first,
values quoted where logfmt needs it, lists comma-joined."""

from __future__ import annotations

import io
import json
import logging
import re

import structlog

from exporter.support.logfmt import text
from exporter.support.logs import Redactor, configure_logging
from tests.support.test_logs import _restore_logging

__all__ = ["_restore_logging"]  # the autouse fixture of test_logs.py: logging put back


def lines() -> list[str]:
    stream = io.StringIO()
    configure_logging("debug", "logfmt", Redactor(["s3cr3t-token-value"]), stream)
    log = structlog.get_logger("exporter.test")
    log.info("exporter_started", accounts=["demo-media", "demo-shop"], listen="0.0.0.0:9877")
    log.warning("poll_failed", problem='HTTP 502 "bad gateway"', token="s3cr3t-token-value")
    logging.getLogger("aiohttp.server").error("Error handling request")
    return stream.getvalue().splitlines()


def test_ts_level_msg_and_caller_come_first() -> None:
    started, failed, foreign = lines()
    assert re.fullmatch(
        r"ts=\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z level=info msg=exporter_started "
        r"caller=test_logfmt\.py:\d+ accounts=demo-media,demo-shop listen=0\.0\.0\.0:9877",
        started,
    )
    assert " level=warn msg=poll_failed caller=test_logfmt.py:" in failed
    assert ' level=error msg="Error handling request" caller=test_logfmt.py:' in foreign
    assert foreign.endswith(" logger=aiohttp.server")
    assert "timestamp=" not in started
    assert "event=" not in started


def test_values_are_quoted_where_logfmt_needs_it_and_secrets_stay_masked() -> None:
    failed = lines()[1]
    assert 'problem="HTTP 502 \\"bad gateway\\""' in failed
    assert "s3cr3t" not in failed
    assert text("") == '""'
    assert text("a=b") == '"a=b"'
    assert text("two\nlines") == '"two\\nlines"'
    assert text("back\\slash") == '"back\\\\slash"'
    assert text("plain") == "plain"
    assert text(None) == ""
    assert (text(True), text(False)) == ("true", "false")
    assert text(("5", 15, 60)) == "5,15,60"
    assert text({"b", "a"}) == "a,b"
    assert text(["a b", "c"]) == '"a b,c"'


def _written(fmt: str) -> list[str]:
    stream = io.StringIO()
    configure_logging("debug", fmt, Redactor(), stream)
    log = structlog.get_logger("exporter.test")
    log.info("exporter_started", accounts=["demo-media"], listen="0.0.0.0:9877")
    log.warning("poll_failed", area="dvr", account="acme", error="HTTP 502")
    logging.getLogger("aiohttp.server").error("Error handling request")
    return stream.getvalue().splitlines()


def test_json_lines_carry_the_keys_and_values_logfmt_lines_carry() -> None:
    """issue 51, point 4: a pipeline that parses one format finds the same names in the other."""
    as_logfmt = [
        dict(re.findall(r'(\w+)=("(?:[^"\\]|\\.)*"|\S*)', line)) for line in _written("logfmt")
    ]
    as_json = [json.loads(line) for line in _written("json")]
    assert [list(d) for d in as_json] == [list(d) for d in as_logfmt]
    for parsed in as_json:
        assert list(parsed)[:4] == ["ts", "level", "msg", "caller"]
    assert [(d["level"], d["msg"]) for d in as_json] == [
        ("info", "exporter_started"),
        ("warn", "poll_failed"),
        ("error", "Error handling request"),
    ]
    assert [d["level"] for d in as_logfmt] == ["info", "warn", "error"]
    assert as_json[1]["caller"] == as_logfmt[1]["caller"]
    assert re.fullmatch(r"test_logfmt\.py:\d+", as_json[1]["caller"])
