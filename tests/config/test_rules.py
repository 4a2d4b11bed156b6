"""One statement of each config rule: the object that checks a key is the one whose text
docs/configuration.md shows, and every check refuses a bad value (a table below names one per
checked key, so a new check without an example fails here)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest

from exporter.config import AccountSettings, ConfigError, Settings, parse_config
from exporter.config.rules import Rule
from exporter.docgen.generate import configuration_md
from exporter.runtime.registry import settings_sections

TOKEN = {"upstream": {"token": "static-token-123"}}


def fields(cls: type[Any], prefix: str = "") -> Iterator[tuple[str, dataclasses.Field[Any]]]:
    """Every settings field with its dotted key (``accounts[].name`` for list items)."""
    for f in dataclasses.fields(cls):
        key = f"{prefix}{f.name}"
        yield key, f
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else None
        if dataclasses.is_dataclass(default):
            yield from fields(type(default), key + ".")
    if cls is Settings:
        yield from fields(AccountSettings, "accounts[].")


RULES = {key: f.metadata["rule"] for key, f in fields(Settings) if f.metadata.get("rule")}
for area in settings_sections():  # each area's section: its rule over the whole, its keys'
    RULES |= {area.name: area.rule} if area.rule else {}
    RULES |= {
        k: f.metadata["rule"]
        for k, f in fields(area.type, f"{area.name}.")
        if f.metadata.get("rule")
    }

# One bad value per checked key: (config overrides, start of the error message).
BAD: dict[str, tuple[dict[str, Any], str]] = {
    "traffic": (
        {"upstream": {"max_requests_per_minute": 2}},
        "upstream.max_requests_per_minute: 2 is below what traffic costs",
    ),
    "upstream.base_url": ({"upstream": {"base_url": "ftp://x"}}, "upstream.base_url:"),
    "upstream.token": (
        {"upstream": {"token": "t", "username": "u", "password": "p"}},
        "upstream: give either",
    ),
    "upstream.username": ({"upstream": {"password": "p"}}, "upstream.username: required"),
    "upstream.password": ({"upstream": {"username": "u"}}, "upstream.password: required"),
    "upstream.timeout_seconds": ({"upstream": {"timeout_seconds": 0}}, "upstream.timeout"),
    "upstream.max_concurrency": ({"upstream": {"max_concurrency": 0}}, "upstream.max_conc"),
    "upstream.max_requests_per_minute": (
        {"upstream": {"max_requests_per_minute": -1}},
        "upstream.max_requests_per_minute:",
    ),
    "accounts": ({"accounts": ["a", "a"]}, "accounts[1].name: 'a' is listed twice"),
    "accounts[].name": ({"accounts": ["a/b"]}, "accounts[0].name:"),
    "accounts[].dvr_streams": (
        {"accounts": [{"name": "a", "dvr_streams": ["x", "x"]}]},
        "accounts[0].dvr_streams[1]:",
    ),
    "traffic.delay_seconds": ({"traffic": {"delay_seconds": -1}}, "traffic.delay_seconds:"),
    "traffic.revisit_minutes": ({"traffic": {"revisit_minutes": 11}}, "traffic.revisit"),
    "traffic.catch_up_minutes": ({"traffic": {"catch_up_minutes": -1}}, "traffic.catch_up"),
    "traffic.resources_include": ({"traffic": {"resources_include": "("}}, "traffic.res"),
    "traffic.resources_exclude": ({"traffic": {"resources_exclude": "("}}, "traffic.res"),
    "traffic.resource_status_codes": (
        {"traffic": {"resource_status_codes": "all"}},
        "traffic.resource_status_codes: expected codes or classes",
    ),
    "metrics.include": ({"metrics": {"include": ["ok", "("]}}, "metrics.include[1]: not a valid"),
    "metrics.exclude": ({"metrics": {"exclude": ["("]}}, "metrics.exclude[0]: not a valid"),
    "traffic.max_resources": ({"traffic": {"max_resources": -1}}, "traffic.max_resources:"),
    "traffic.series_retention_hours": (
        {"traffic": {"series_retention_hours": -1}},
        "traffic.series_retention_hours:",
    ),
    "restream.interval_seconds": ({"restream": {"interval_seconds": 0}}, "restream.interval"),
    "restream.history_interval_seconds": (
        {"restream": {"history_interval_seconds": 0}},
        "restream.history_interval_seconds:",
    ),
    "dvr.interval_seconds": ({"dvr": {"interval_seconds": 0}}, "dvr.interval_seconds:"),
    "dvr.poll_slices": ({"dvr": {"poll_slices": 0}}, "dvr.poll_slices:"),
    "talking_head.interval_seconds": (
        {"talking_head": {"interval_seconds": 0}},
        "talking_head.interval_seconds:",
    ),
    "listen": ({"listen": "nowhere"}, "listen:"),
    "admin.enabled": ({"admin": {"enabled": True}}, "admin.write_token: required"),
    "admin.read_token": (
        {"admin": {"read_token": "r" * 20, "write_token": "r" * 20}},
        "admin.read_token: must differ",
    ),
    "admin.write_token": ({"admin": {"write_token": "short"}}, "admin.write_token: at least"),
    "admin.replicas_per_shard": ({"admin": {"replicas_per_shard": 11}}, "admin.replicas"),
    "admin.auth_failures_per_minute": (
        {"admin": {"auth_failures_per_minute": -1}},
        "admin.auth_failures_per_minute:",
    ),
    "admin.upstream_concurrency": (
        {"admin": {"upstream_concurrency": 0}},
        "admin.upstream_concurrency:",
    ),
    "admin.upstream_deadline_seconds": (
        {"admin": {"upstream_deadline_seconds": 0}},
        "admin.upstream_deadline_seconds:",
    ),
    "admin.talking_head_reads_per_day": (
        {"admin": {"talking_head_reads_per_day": -1}},
        "admin.talking_head_reads_per_day:",
    ),
    "admin.reads_per_minute": (
        {"admin": {"reads_per_minute": -1}},
        "admin.reads_per_minute:",
    ),
    "admin.trusted_proxy_header": (
        {"admin": {"trusted_proxy_header": "X Forwarded For"}},
        "admin.trusted_proxy_header: expected an HTTP header name",
    ),
    "server.header_timeout_seconds": (
        {"server": {"header_timeout_seconds": 0}},
        "server.header_timeout_seconds:",
    ),
    "server.body_timeout_seconds": (
        {"server": {"body_timeout_seconds": -1}},
        "server.body_timeout_seconds:",
    ),
    "server.max_connections": ({"server": {"max_connections": 0}}, "server.max_connections:"),
    "remote_write": (
        {
            "remote_write": {
                "url": "http://p/w",
                "bearer_token": "t",
                "basic_auth": {"username": "u"},
            }
        },
        "remote_write: give at most one of bearer_token, basic_auth",
    ),
    "remote_write.url": (
        {"remote_write": {"url": "http://u:p@prometheus/api/v1/write"}},
        "remote_write.url: no credentials in the URL",
    ),
    "remote_write.timeout_seconds": (
        {"remote_write": {"timeout_seconds": 0}},
        "remote_write.timeout_seconds:",
    ),
    "remote_write.max_age_minutes": (
        {"remote_write": {"max_age_minutes": 0}},
        "remote_write.max_age_minutes:",
    ),
    "log.level": ({"log": {"level": "loud"}}, "log.level: expected debug, info"),
    "log.format": (
        {"log": {"format": "xml"}},
        "log.format: expected auto, console, logfmt or json",
    ),
}


def test_every_rule_is_a_rule_object_with_a_check_or_a_named_checker() -> None:
    assert len(RULES) > 25
    for key, rule in RULES.items():
        assert isinstance(rule, Rule), key
        assert rule.text, key
        assert (rule.check is None) != (not rule.checked_by), key
    with pytest.raises(ValueError, match="exactly one of check and checked_by"):
        Rule("> 0")


def test_every_check_has_a_bad_example_here() -> None:
    checked = {key for key, rule in RULES.items() if rule.check is not None}
    assert checked == set(BAD)


@pytest.mark.parametrize("key", sorted(BAD))
def test_each_check_refuses_its_bad_value(key: str) -> None:
    overrides, message = BAD[key]
    raw = {**TOKEN, **overrides}
    if "upstream" in overrides:
        given = overrides["upstream"]
        raw["upstream"] = {**TOKEN["upstream"], **given}
        if "token" not in given and {"username", "password"} & set(given):
            del raw["upstream"]["token"]  # a login instead of the token
    with pytest.raises(ConfigError) as info:
        parse_config(raw, {})
    assert str(info.value).startswith(message), str(info.value)


def test_the_docs_show_the_text_of_the_rule_that_is_checked() -> None:
    doc = configuration_md()
    for key, rule in RULES.items():
        assert rule.text.replace("|", "\\|") in doc, key
