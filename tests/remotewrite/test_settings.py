"""The ``remote_write`` section: off by default, nested ``basic_auth``/``tls_config`` read and
checked, its secrets masked and redacted, and the one-minute settle reads in the cost."""

from __future__ import annotations

from typing import Any

import pytest

from exporter.config import ConfigError, parse_config
from exporter.config.report import masked_dict
from exporter.remotewrite.settings import REMOTE_WRITE_SECTION
from exporter.traffic.settings import requests_per_minute

TOKEN = {"upstream": {"token": "t"}}
URL = "https://prometheus.example:9090/api/v1/write"


def parse(section: dict[str, Any] | None = None, **more: Any) -> Any:
    raw: dict[str, Any] = {**TOKEN, **more}
    if section is not None:
        raw["remote_write"] = section
    return parse_config(raw, {})


def test_off_by_default() -> None:
    assert not REMOTE_WRITE_SECTION.of(parse()).enabled


def test_nested_sections_are_read_checked_masked_and_redacted() -> None:
    settings = parse(
        {
            "url": URL,
            "basic_auth": {"username": "writer", "password": "pw-0123456789"},
            "tls_config": {"ca_file": "/etc/ca.pem", "insecure_skip_verify": True},
        }
    )
    rw = REMOTE_WRITE_SECTION.of(settings)
    assert (rw.basic_auth.username, rw.tls_config.ca_file) == ("writer", "/etc/ca.pem")
    assert rw.tls_config.insecure_skip_verify is True
    assert "pw-0123456789" in settings.secrets()
    shown = masked_dict(settings)["remote_write"]
    assert shown["basic_auth"] == {
        "username": "writer",
        "password": "********",
        "password_file": "",
    }
    with pytest.raises(ConfigError, match=r"remote_write\.tls_config\.ca: unknown key"):
        parse({"url": URL, "tls_config": {"ca": "x"}})
    with pytest.raises(ConfigError, match=r"remote_write\.tls_config: cert_file and key_file"):
        parse({"url": URL, "tls_config": {"cert_file": "c.pem"}})


def test_with_the_output_on_every_settle_read_is_one_minute_in_the_cost() -> None:
    assert requests_per_minute(parse()) == pytest.approx(2.4)
    assert requests_per_minute(parse({"url": URL})) == pytest.approx(4.0)
    schedule = {"traffic": {"revisit_minutes": [5, 15, 60]}}
    assert requests_per_minute(parse(**schedule)) == pytest.approx(3.0)
    assert requests_per_minute(parse({"url": URL}, **schedule)) == pytest.approx(8.0)


def test_check_config_warns_when_every_minute_would_be_too_old() -> None:
    late = {"traffic": {"revisit_minutes": [5, 60, 1440], "state_file": "/var/lib/t.json"}}
    assert REMOTE_WRITE_SECTION.warnings(parse({"url": URL}, **late)) == [
        "remote_write.max_age_minutes: 330 is below the age at which a minute is final (about "
        "1443 min: traffic.delay_seconds and the last age of traffic.revisit_minutes); every "
        "minute would be dropped as too old"
    ]
    late["traffic"]["revisit_minutes"] = [5, 60]
    assert REMOTE_WRITE_SECTION.warnings(parse({"url": URL}, **late)) == []
