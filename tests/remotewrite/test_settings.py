"""The ``remote_write`` section: off by default, nested ``basic_auth``/``tls_config`` read and
checked, its secrets masked and redacted, and the one-minute settle reads in the cost."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from exporter.config import ConfigError, parse_config
from exporter.config.report import masked_dict
from exporter.remotewrite.settings import REMOTE_WRITE_SECTION
from exporter.traffic.settings import requests_per_minute
from tests.web.tls_certs import make_certs

TOKEN = {"upstream": {"token": "t"}}
URL = "https://prometheus.example:9090/api/v1/write"


def parse(section: dict[str, Any] | None = None, **more: Any) -> Any:
    raw: dict[str, Any] = {**TOKEN, **more}
    if section is not None:
        raw["remote_write"] = section
    return parse_config(raw, {})


def test_off_by_default() -> None:
    assert not REMOTE_WRITE_SECTION.of(parse()).enabled


def test_nested_sections_are_read_checked_masked_and_redacted(tmp_path: Path) -> None:
    ca = str(make_certs(tmp_path).ca)
    settings = parse(
        {
            "url": URL,
            "basic_auth": {"username": "writer", "password": "pw-0123456789"},
            "tls_config": {"ca_file": ca, "insecure_skip_verify": True},
        }
    )
    rw = REMOTE_WRITE_SECTION.of(settings)
    assert (rw.basic_auth.username, rw.tls_config.ca_file) == ("writer", ca)
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


def problems(section: dict[str, Any]) -> tuple[str, ...]:
    with pytest.raises(ConfigError) as caught:
        parse(section)
    return caught.value.problems


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("https://[host/api/v1/write", "expected an http(s) URL such as"),
        ("http://prometheus:99999/api/v1/write", "Port out of range 0-65535"),
        ("http://prometheus:port/api/v1/write", "expected an http(s) URL such as"),
        ("http://prometheus:0/api/v1/write", "port 0 is no port to send to"),
        ("http://prometheus:9090/api/v1/write?a=b c", "must not contain spaces"),
        ("ftp://prometheus/api/v1/write", "expected an http(s) URL such as"),
    ],
)
def test_a_bad_url_is_named_without_a_traceback(url: str, problem: str) -> None:
    (only,) = problems({"url": url})
    assert only.startswith("remote_write.url: ")
    assert problem in only


def test_every_file_is_checked_naming_its_key(tmp_path: Path) -> None:
    gone = str(tmp_path / "gone")
    not_pem = tmp_path / "not.pem"
    not_pem.write_text("not a certificate\n")
    assert problems({"url": URL, "bearer_token_file": gone}) == (
        f"remote_write.bearer_token_file: cannot read {gone!r}: No such file or directory",
    )
    assert problems(
        {"url": URL, "basic_auth": {"username": "w", "password_file": str(tmp_path)}}
    ) == (
        f"remote_write.basic_auth.password_file: {str(tmp_path)!r} is not a regular file "
        "(a FIFO, a device or a directory)",
    )
    assert problems({"url": URL, "tls_config": {"ca_file": gone}}) == (
        f"remote_write.tls_config.ca_file: cannot read {gone!r}: No such file or directory",
    )
    (bad_ca,) = problems({"url": URL, "tls_config": {"ca_file": str(not_pem)}})
    assert bad_ca.startswith("remote_write.tls_config.ca_file: no usable CA certificate (")
    certs = make_certs(tmp_path / "certs")
    (mismatch,) = problems(
        {
            "url": URL,
            "tls_config": {"cert_file": str(certs.client_cert), "key_file": str(certs.other_key)},
        }
    )
    assert mismatch.startswith("remote_write.tls_config.cert_file: not a certificate that key_file")
    assert problems({"url": "http://p:9090/api/v1/write", "tls_config": {"server_name": "p"}}) == (
        "remote_write.tls_config.server_name: only used with an https url",
    )


def test_the_urls_query_secrets_are_masked_and_redacted() -> None:
    url = "https://receiver.example/api/v1/write?token=s3cr3t-token&api_key=k3y-value&tenant=a"
    settings = parse({"url": url})
    shown = masked_dict(settings)["remote_write"]["url"]
    assert "s3cr3t-token" not in shown
    assert "k3y-value" not in shown
    assert shown.startswith("https://receiver.example/api/v1/write?token=********&api_key=")
    assert {"s3cr3t-token", "k3y-value"} <= set(settings.secrets())


def test_check_config_names_a_broken_url_and_masks_the_query(tmp_path: Path) -> None:
    """The command as an operator runs it: one line per problem, no traceback, no secret."""
    config = tmp_path / "config.yml"
    base = {"upstream": {"token": "t"}, "traffic": {"state_file": str(tmp_path / "state.json")}}
    good = "http://127.0.0.1:9090/api/v1/write?token=s3cr3t-token"
    for url, status in ((good, 0), ("https://[host/api/v1/write?token=s3cr3t-token", 1)):
        config.write_text(yaml.safe_dump({**base, "remote_write": {"url": url}}))
        done = subprocess.run(
            [sys.executable, "-m", "exporter", "check-config", "--config.file", str(config)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        out = done.stdout + done.stderr
        assert done.returncode == status, out
        assert "Traceback" not in out
        assert "s3cr3t-token" not in out
    assert "remote_write.url: expected an http(s) URL" in out
