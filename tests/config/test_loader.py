"""Config loading: every refusal names the key and what is wrong; expansion; overrides; masking."""

from __future__ import annotations

import collections
import dataclasses
from pathlib import Path
from typing import Any

import pytest
import yaml

from exporter.config import (
    SECRET_MASK,
    AccountSettings,
    ConfigError,
    Settings,
    Shard,
    load_config,
    masked_dict,
    notes,
    parse_config,
    stable_hash,
    warnings,
)
from exporter.dvr.settings import DVR_SECTION
from exporter.restream.settings import RESTREAM_SECTION
from exporter.talking_head.settings import TALKING_HEAD_SECTION
from exporter.traffic.settings import TRAFFIC_SECTION
from exporter.traffic.settings import requests_per_minute as traffic_requests_per_minute

TOKEN = {"upstream": {"token": "static-token-123"}}

# The example of PRODUCT.md, verbatim.
PRODUCT_EXAMPLE = """\
upstream:
  base_url: https://api.cdnvideo.ru
  token: ${CDNVIDEO_TOKEN}          # static CDN-AUTH-TOKEN, or:
  username: ops@example.com         # token from /app/oauth/v1/token/, renewed before expiry
  password: ${CDNVIDEO_PASSWORD}
  timeout_seconds: 10
  max_concurrency: 8
accounts:                           # omit to discover them via /app/inventory/v1/accounts/
  - name: acme
    dvr_streams: [live/main, live/backup]
traffic:                            # /app/metrics/v1/ and /resources
  enabled: true
  delay_seconds: 120                # read a minute this long after it closes
  revisit_minutes: 5                # re-read recent minutes; add only late increases
  catch_up_minutes: 60              # longest gap backfilled after an outage or restart
  per_resource: true
  resources_include: ".*"
  resources_exclude: ""
  max_resources: 0                  # 0 = no cap; N = top N by edge traffic, rest summed as resource="__other__"
  state_file: ""                    # where the accounted-minute cursor survives restarts
restream:  {enabled: true, interval_seconds: 30, history_interval_seconds: 300}
dvr:       {enabled: true, interval_seconds: 60}
talking_head: {enabled: true, interval_seconds: 21600}   # the monthly request allowance is small
listen: 0.0.0.0:9877
shard: 0/1                          # this replica serves accounts whose stable hash % N == i
admin:
  enabled: false
  read_token: ${CDNVIDEO_ADMIN_READ_TOKEN}
  write_token: ${CDNVIDEO_ADMIN_WRITE_TOKEN}
log: {level: info, format: auto}    # auto = console on a terminal, JSON otherwise
"""  # noqa: E501 (verbatim copy)


def with_token(**sections: Any) -> dict[str, Any]:
    raw: dict[str, Any] = {"upstream": {"token": "static-token-123"}}
    for key, value in sections.items():
        if isinstance(value, dict) and isinstance(raw.get(key), dict):
            raw[key] = {**raw[key], **value}
        else:
            raw[key] = value
    return raw


def refused(raw: Any, env: dict[str, str] | None = None) -> str:
    with pytest.raises(ConfigError) as info:
        parse_config(raw, env or {})
    return str(info.value)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.yml"
    path.write_text(text, encoding="utf-8")
    return path


# --- happy paths ------------------------------------------------------------------------------
def test_minimal_config_takes_every_default() -> None:
    s = parse_config(TOKEN, {})
    assert s.upstream.base_url == "https://api.cdnvideo.ru"
    assert s.accounts is None
    assert s.listen == "0.0.0.0:9877"
    assert (s.listen_host, s.listen_port) == ("0.0.0.0", 9877)
    assert s.shard == Shard(0, 1)
    assert TRAFFIC_SECTION.of(s).delay_seconds == 120
    assert TALKING_HEAD_SECTION.of(s).interval_seconds == 21600.0
    assert s.admin.enabled is False
    assert (s.log.level, s.log.format) == ("info", "auto")


def test_product_example_config_parses(tmp_path: Path) -> None:
    env = {"CDNVIDEO_PASSWORD": "hunter2-pass"}
    s = load_config(write(tmp_path, PRODUCT_EXAMPLE), env)
    assert s.upstream.username == "ops@example.com"
    assert s.upstream.password == "hunter2-pass"
    assert s.upstream.token == ""
    assert s.accounts == (AccountSettings("acme", ("live/main", "live/backup")),)
    assert RESTREAM_SECTION.of(s).history_interval_seconds == 300.0
    assert TRAFFIC_SECTION.of(s).resources_exclude == ""
    assert s.shard == Shard(0, 1)
    assert s.admin.read_token == ""


def test_empty_file_is_refused_for_lack_of_credentials(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^upstream: no credentials"):
        load_config(write(tmp_path, ""), {})


def test_accounts_may_be_plain_names() -> None:
    s = parse_config(with_token(accounts=["acme", {"name": "shop", "dvr_streams": "news"}]), {})
    assert s.accounts == (AccountSettings("acme"), AccountSettings("shop", ("news",)))


def test_ipv6_and_empty_listen_hosts() -> None:
    assert parse_config(with_token(listen="[::1]:9000"), {}).listen_host == "::1"
    assert parse_config(with_token(listen=":9000"), {}).listen_host == "0.0.0.0"


def test_log_level_is_case_insensitive() -> None:
    assert parse_config(with_token(log={"level": "DEBUG"}), {}).log.level == "debug"


def test_null_values_mean_the_default() -> None:
    s = parse_config(
        with_token(traffic=None, listen=None, shard=None, dvr={"interval_seconds": None}), {}
    )
    assert TRAFFIC_SECTION.of(s).delay_seconds == 120
    assert s.listen == "0.0.0.0:9877"
    assert s.shard == Shard(0, 1)
    assert DVR_SECTION.of(s).interval_seconds == 60.0


# --- ${VAR} expansion -------------------------------------------------------------------------
def test_var_expands_from_the_environment(tmp_path: Path) -> None:
    text = "upstream:\n  token: ${MY_TOKEN}\nlisten: ${LISTEN:-127.0.0.1:9100}\n"
    s = load_config(write(tmp_path, text), {"MY_TOKEN": "from-env-token"})
    assert s.upstream.token == "from-env-token"
    assert s.listen == "127.0.0.1:9100"


def test_var_default_is_used_when_unset_or_empty(tmp_path: Path) -> None:
    text = "upstream:\n  token: ${T:-fallback-token}\n"
    assert load_config(write(tmp_path, text), {}).upstream.token == "fallback-token"
    assert load_config(write(tmp_path, text), {"T": ""}).upstream.token == "fallback-token"
    assert load_config(write(tmp_path, text), {"T": "set"}).upstream.token == "set"


def test_unset_var_without_default_is_empty(tmp_path: Path) -> None:
    text = "upstream:\n  token: ${NOT_SET}\n  username: u\n  password: pw-${NOT_SET}x\n"
    s = load_config(write(tmp_path, text), {})
    assert (s.upstream.token, s.upstream.password) == ("", "pw-x")


def test_expanded_numbers_and_booleans_take_the_keys_type(tmp_path: Path) -> None:
    text = (
        "upstream: {token: t0k, timeout_seconds: ${TIMEOUT:-2.5}, max_concurrency: '${CONC}'}\n"
        "admin: {enabled: '${ADMIN:-false}'}\n"
        "dvr: {interval_seconds: '${DVR_INTERVAL}'}\n"
    )
    s = load_config(write(tmp_path, text), {"CONC": "3"})
    assert s.upstream.timeout_seconds == 2.5
    assert s.upstream.max_concurrency == 3
    assert s.admin.enabled is False
    assert DVR_SECTION.of(s).interval_seconds == 60.0  # an empty expansion means the default


def test_expanded_value_of_the_wrong_type_is_refused(tmp_path: Path) -> None:
    text = "upstream: {token: t0k, max_concurrency: '${CONC}'}\n"
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, text), {"CONC": "many"})
    assert str(info.value) == (
        "upstream.max_concurrency: expected a whole number, got 'many' (line 1)"
    )


@pytest.mark.parametrize(
    "secret", ["abc #1", "p@ss: word", "*alias", "{x", "0123", "yes", "null", "a\nb", "${OTHER}"]
)
def test_expanded_secret_is_taken_literally(tmp_path: Path, secret: str) -> None:
    text = "upstream:\n  username: ops\n  password: ${CDNVIDEO_PASSWORD_FILEVAR}\n"
    s = load_config(write(tmp_path, text), {"CDNVIDEO_PASSWORD_FILEVAR": secret, "OTHER": "no"})
    assert s.upstream.password == secret


def test_var_in_a_comment_or_inside_text_is_harmless(tmp_path: Path) -> None:
    text = '# uses ${CDNVIDEO_TOKEN}\nupstream:\n  token: "a-${PART}-b"  # ${X}\n'
    s = load_config(write(tmp_path, text), {"PART": "x: y # z", "X": "\n["})
    assert s.upstream.token == "a-x: y # z-b"


def test_parse_config_expands_vars_of_an_already_parsed_document() -> None:
    s = parse_config({"upstream": {"token": "${TOK}"}}, {"TOK": "abc-token"})
    assert s.upstream.token == "abc-token"


# --- CDNVIDEO_* overrides ---------------------------------------------------------------------
def test_env_token_overrides_the_file() -> None:
    s = parse_config(TOKEN, {"CDNVIDEO_TOKEN": "env-token"})
    assert s.upstream.token == "env-token"


def test_env_login_and_admin_tokens_fill_missing_keys() -> None:
    env = {
        "CDNVIDEO_USERNAME": "ops@example.com",
        "CDNVIDEO_PASSWORD": "env-password",
        "CDNVIDEO_BASE_URL": "https://api.example-reseller.net",
        "CDNVIDEO_ADMIN_READ_TOKEN": "read-token-0123456",
        "CDNVIDEO_ADMIN_WRITE_TOKEN": "write-token-0123456",
    }
    s = parse_config({"admin": {"enabled": True}}, env)
    assert (s.upstream.username, s.upstream.password) == ("ops@example.com", "env-password")
    assert s.upstream.base_url == "https://api.example-reseller.net"
    assert (s.admin.read_token, s.admin.write_token) == (
        "read-token-0123456",
        "write-token-0123456",
    )


def test_empty_env_override_is_ignored() -> None:
    assert parse_config(TOKEN, {"CDNVIDEO_TOKEN": ""}).upstream.token == "static-token-123"


def test_env_shard_overrides_the_file() -> None:
    s = parse_config(with_token(shard="0/1"), {"CDNVIDEO_SHARD": "2/3"})
    assert s.shard == Shard(2, 3)
    assert refused(TOKEN, {"CDNVIDEO_SHARD": "3/3"}) == (
        "shard (from CDNVIDEO_SHARD): index must be below the count (0 <= index < count), got '3/3'"
    )


@pytest.mark.parametrize(
    ("pod", "shards", "shard"),
    [
        ("rel-cdnvideo-exporter-0", "3", Shard(0, 3)),
        ("x-4", "3", Shard(1, 3)),
        ("x-7", "1", Shard()),
    ],
)
def test_a_statefulset_pod_serves_its_ordinal_modulo_the_shard_count(
    pod: str, shards: str, shard: Shard
) -> None:
    env = {"CDNVIDEO_SHARDS": shards, "POD_NAME": pod}
    assert parse_config(with_token(shard="0/1"), env).shard == shard
    assert parse_config(TOKEN, {**env, "CDNVIDEO_SHARD": "1/2"}).shard == Shard(1, 2)


@pytest.mark.parametrize(
    ("env", "problem"),
    [
        ({"CDNVIDEO_SHARDS": "0", "POD_NAME": "x-1"}, "expected a whole number above 0, got '0'"),
        (
            {"CDNVIDEO_SHARDS": "two", "POD_NAME": "x-1"},
            "expected a whole number above 0, got 'two'",
        ),
        (
            {"CDNVIDEO_SHARDS": "2"},
            "POD_NAME must end in the pod ordinal (<name>-<number>), got ''",
        ),
        (
            {"CDNVIDEO_SHARDS": "2", "POD_NAME": "web-a"},
            "POD_NAME must end in the pod ordinal (<name>-<number>), got 'web-a'",
        ),
    ],
)
def test_a_shard_count_without_a_pod_ordinal_is_refused_by_name(
    env: dict[str, str], problem: str
) -> None:
    assert refused(TOKEN, env) == f"shard (from CDNVIDEO_SHARDS): {problem}"


def test_env_override_does_not_hide_a_malformed_section() -> None:
    assert refused({"upstream": "oops"}, {"CDNVIDEO_TOKEN": "t"}) == (
        "upstream: expected a mapping, got a str (not shown, the section holds secrets)"
    )


# --- refusals ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("url", "message"),
    [
        (
            "ftp://api.cdnvideo.ru",
            "upstream.base_url: expected an http(s) URL such as https://api.cdnvideo.ru, "
            "got 'ftp://api.cdnvideo.ru'",
        ),
        (
            "api.cdnvideo.ru",
            "upstream.base_url: expected an http(s) URL such as https://api.cdnvideo.ru, "
            "got 'api.cdnvideo.ru'",
        ),
        (
            "https://",
            "upstream.base_url: expected an http(s) URL such as https://api.cdnvideo.ru, "
            "got 'https://'",
        ),
        (
            "http://[::1",
            "upstream.base_url: expected an http(s) URL such as https://api.cdnvideo.ru, "
            "got 'http://[::1' (Invalid IPv6 URL)",
        ),
        (
            "https://user:pw@api.cdnvideo.ru",
            "upstream.base_url: must not carry credentials; use token or password",
        ),
        (
            "https://api.cdnvideo.ru/?x=1",
            "upstream.base_url: must not carry a query or fragment, "
            "got 'https://api.cdnvideo.ru/?x=1'",
        ),
        (
            "https://api cdnvideo.ru",
            "upstream.base_url: must not contain spaces, got 'https://api cdnvideo.ru'",
        ),
    ],
)
def test_bad_base_url_is_refused(url: str, message: str) -> None:
    assert refused(with_token(upstream={"base_url": url})) == message


@pytest.mark.parametrize(
    ("section", "key"),
    [
        ("upstream", "timeout_seconds"),
        ("restream", "interval_seconds"),
        ("restream", "history_interval_seconds"),
        ("dvr", "interval_seconds"),
        ("talking_head", "interval_seconds"),
    ],
)
@pytest.mark.parametrize("value", [0, -5])
def test_interval_not_above_zero_is_refused(section: str, key: str, value: int) -> None:
    assert refused(with_token(**{section: {key: value}})) == (
        f"{section}.{key}: must be greater than 0, got {float(value)}"
    )


def test_max_concurrency_zero_is_refused() -> None:
    assert refused(with_token(upstream={"max_concurrency": 0})) == (
        "upstream.max_concurrency: must be greater than 0, got 0"
    )


def test_non_finite_number_is_refused() -> None:
    assert refused(with_token(dvr={"interval_seconds": float("inf")})) == (
        "dvr.interval_seconds: expected a finite number, got inf"
    )


@pytest.mark.parametrize("shard", ["3/2", "2/2", "0/0"])
def test_shard_index_not_below_count_is_refused(shard: str) -> None:
    assert refused(with_token(shard=shard)) == (
        f"shard: index must be below the count (0 <= index < count), got {shard!r}"
    )


@pytest.mark.parametrize("shard", ["1-2", "a/b", "1/2/3", "/2", "-1/2", 2, True])
def test_bad_shard_syntax_is_refused(shard: Any) -> None:
    assert refused(with_token(shard=shard)) == (
        f"shard: expected INDEX/COUNT such as 0/1, got {str(shard)!r}"
    )


def test_unknown_top_level_key_gets_a_hint() -> None:
    assert (
        refused(with_token(acounts=["acme"])) == "acounts: unknown key (did you mean 'accounts'?)"
    )


def test_unknown_key_in_a_section_gets_a_hint() -> None:
    assert refused(with_token(upstream={"timeout_secs": 5})) == (
        "upstream.timeout_secs: unknown key (did you mean 'timeout_seconds'?)"
    )
    assert refused(with_token(accounts=[{"name": "a", "dvr_stream": ["x"]}])) == (
        "accounts[0].dvr_stream: unknown key (did you mean 'dvr_streams'?)"
    )


def test_unknown_key_without_a_close_match_has_no_hint() -> None:
    assert refused(with_token(zzzz=1)) == "zzzz: unknown key"


def test_token_and_login_together_are_refused() -> None:
    raw = {"upstream": {"token": "t0k", "username": "ops", "password": "pw"}}
    assert refused(raw) == (
        "upstream: give either token (CDNVIDEO_TOKEN) or username + password "
        "(CDNVIDEO_USERNAME, CDNVIDEO_PASSWORD), not both"
    )


def test_no_credentials_are_refused() -> None:
    assert refused({}) == (
        "upstream: no credentials; set upstream.token (or CDNVIDEO_TOKEN) "
        "or upstream.username + upstream.password"
    )


def test_half_a_login_is_refused() -> None:
    assert refused({"upstream": {"username": "ops"}}) == (
        "upstream.password: required with the other half of the login"
    )
    assert refused({"upstream": {"password": "pw"}}) == (
        "upstream.username: required with the other half of the login"
    )


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            with_token(upstream={"timeout_seconds": "ten"}),
            "upstream.timeout_seconds: expected a number, got 'ten'",
        ),
        (
            with_token(upstream={"max_concurrency": 2.5}),
            "upstream.max_concurrency: expected a whole number, got 2.5",
        ),
        (
            with_token(upstream={"max_concurrency": True}),
            "upstream.max_concurrency: expected a whole number, got True",
        ),
        (
            with_token(traffic={"enabled": "yes"}),
            "traffic.enabled: expected true or false, got 'yes'",
        ),
        (
            with_token(upstream={"token": ["a"]}),
            "upstream.token: expected a string, got a list (not shown, a secret)",
        ),
        (with_token(dvr=[1]), "dvr: expected a mapping, got [1]"),
        (with_token(accounts="acme"), "accounts: expected a list of accounts, got 'acme'"),
        (
            with_token(accounts=[{"name": "a", "dvr_streams": [1]}]),
            "accounts[0].dvr_streams: expected a list of non-empty strings, got [1]",
        ),
        (with_token(listen=9877), "listen: expected HOST:PORT, got 9877"),
        (["upstream"], "config: expected a mapping at the top level, got ['upstream']"),
    ],
)
def test_wrong_type_is_refused(raw: Any, message: str) -> None:
    assert refused(raw) == message


@pytest.mark.parametrize("key", ["resources_include", "resources_exclude"])
def test_bad_regex_is_refused(key: str) -> None:
    assert refused(with_token(traffic={key: "(live"})) == (
        f"traffic.{key}: not a valid regular expression "
        "(missing ), unterminated subpattern at position 0)"
    )


@pytest.mark.parametrize("value", [-1, 11])
def test_revisit_out_of_range_is_refused(value: int) -> None:
    assert refused(with_token(traffic={"revisit_minutes": value})) == (
        f"traffic.revisit_minutes: must be 0-10 (a re-read fits one 10-minute window), got {value}"
    )


@pytest.mark.parametrize(
    ("value", "stages"),
    [(5, (5,)), (0, ()), ([5], (5,)), ([5, 15, 60], (5, 15, 60)), ([2, 1440], (2, 1440))],
)
def test_revisit_takes_a_number_or_a_schedule(value: Any, stages: tuple[int, ...]) -> None:
    assert (
        TRAFFIC_SECTION.of(
            parse_config(with_token(traffic={"revisit_minutes": value}))
        ).settle_stages
        == stages
    )


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ([], ": the list is empty; use 0 to turn settling off"),
        (
            [15, 60],
            "[0]: the first age must be 1-10 (its runs are read as one window of up to "
            "10 minutes), got 15",
        ),
        ([5, 5], "[1]: ages must rise, got 5 after 5"),
        ([5, 60, 1441], "[2]: at most 1440 (a day), got 1441"),
        ([5, "15"], "[1]: expected a whole number, got '15'"),
    ],
)
def test_bad_schedules_are_refused(value: Any, message: str) -> None:
    assert (
        refused(with_token(traffic={"revisit_minutes": value}))
        == f"traffic.revisit_minutes{message}"
    )


@pytest.mark.parametrize("key", ["delay_seconds", "catch_up_minutes", "max_resources"])
def test_negative_traffic_counts_are_refused(key: str) -> None:
    assert refused(with_token(traffic={key: -1})) == f"traffic.{key}: must be 0 or more, got -1"


def test_admin_enabled_without_write_token_is_refused() -> None:
    assert refused(with_token(admin={"enabled": True, "read_token": "read-only"})) == (
        "admin.write_token: required when admin.enabled is true (set CDNVIDEO_ADMIN_WRITE_TOKEN)"
        "\nadmin.read_token: at least 16 characters, got 9; generate one with "
        'python -c "import secrets; print(secrets.token_urlsafe(32))"'
    )


@pytest.mark.parametrize("key", ["read_token", "write_token"])
def test_admin_tokens_shorter_than_16_characters_are_refused(key: str) -> None:
    admin = {"enabled": True, "read_token": "r" * 20, "write_token": "w" * 20, key: "x" * 15}
    assert refused(with_token(admin=admin)) == (
        f"admin.{key}: at least 16 characters, got 15; generate one with "
        'python -c "import secrets; print(secrets.token_urlsafe(32))"'
    )
    admin[key] = "x" * 16
    assert parse_config(with_token(admin=admin), env={}).admin.enabled


@pytest.mark.parametrize("replicas", [0, 11])
def test_replicas_per_shard_outside_1_to_10_is_refused(replicas: int) -> None:
    admin = {"enabled": True, "write_token": "w" * 20, "replicas_per_shard": replicas}
    assert refused(with_token(admin=admin)) == (
        f"admin.replicas_per_shard: must be 1-10 (each replica allows 10 // replicas "
        f"generate requests a minute), got {replicas}"
    )


def test_negative_auth_failures_per_minute_is_refused() -> None:
    admin = {"enabled": True, "write_token": "w" * 20, "auth_failures_per_minute": -1}
    assert refused(with_token(admin=admin)) == (
        "admin.auth_failures_per_minute: must be 0 (no throttle) or more, got -1"
    )


def test_admin_tokens_must_differ() -> None:
    raw = with_token(
        admin={
            "enabled": True,
            "read_token": "same-token-012345",
            "write_token": "same-token-012345",
        }
    )
    assert refused(raw) == "admin.read_token: must differ from admin.write_token"


@pytest.mark.parametrize("listen", ["9877", "host:0", "host:65536", "host:http", "host:", "host:²"])
def test_bad_listen_port_is_refused(listen: str) -> None:
    assert refused(with_token(listen=listen)) == (
        f"listen: expected HOST:PORT with a port 1-65535, got {listen!r}"
    )


@pytest.mark.parametrize(("listen", "host"), [("::1:9877", "::1"), ("my host:80", "my host")])
def test_bad_listen_host_is_refused(listen: str, host: str) -> None:
    assert refused(with_token(listen=listen)) == (
        f"listen: {host!r} is not a host name or address (write IPv6 addresses in brackets, "
        f"e.g. [::1]:9877), got {listen!r}"
    )


def test_bad_log_level_and_format_are_refused() -> None:
    assert refused(with_token(log={"level": "verbose"})) == (
        "log.level: expected debug, info, warn, warning or error, got 'verbose'"
    )
    assert refused(with_token(log={"format": "xml"})) == (
        "log.format: expected auto, console, logfmt or json, got 'xml'"
    )


def test_duplicate_account_is_refused() -> None:
    assert refused(with_token(accounts=["acme", {"name": "acme"}])) == (
        "accounts[1].name: 'acme' is listed twice"
    )


@pytest.mark.parametrize(
    ("accounts", "message"),
    [
        (
            [],
            "accounts: the list is empty; name at least one account, or leave the key out to "
            "discover accounts from the platform",
        ),
        ([{"dvr_streams": ["x"]}], "accounts[0].name: required, the account name of the API paths"),
        (["a/b"], "accounts[0].name: 'a/b' is not a valid account name"),
        ([".."], "accounts[0].name: '..' is not a valid account name"),
        (
            [{"name": "a", "dvr_streams": ["live/../x"]}],
            "accounts[0].dvr_streams[0]: 'live/../x' is not a stream name "
            "(no empty, '.' or '..' path segments)",
        ),
        (
            [{"name": "a", "dvr_streams": ["/live"]}],
            "accounts[0].dvr_streams[0]: '/live' is not a stream name "
            "(no empty, '.' or '..' path segments)",
        ),
        (
            [{"name": "a", "dvr_streams": ["news", "news"]}],
            "accounts[0].dvr_streams[1]: 'news' is listed twice",
        ),
    ],
)
def test_bad_accounts_are_refused(accounts: Any, message: str) -> None:
    assert refused(with_token(accounts=accounts)) == message


def test_missing_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "absent.yml"
    with pytest.raises(ConfigError) as info:
        load_config(path, {})
    assert str(info.value) == f"config file {str(path)!r}: No such file or directory"


def test_directory_instead_of_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^config file '.*': Is a directory$"):
        load_config(tmp_path, {})


def test_non_utf8_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "config.yml"
    path.write_bytes(b"upstream:\n  token: \xff\n")
    with pytest.raises(ConfigError) as info:
        load_config(path, {})
    assert str(info.value) == f"config file {str(path)!r}: not UTF-8 text (byte 19)"


def test_impossible_yaml_date_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, "upstream:\n  token: 2026-13-01\n")
    with pytest.raises(ConfigError) as info:
        load_config(path, {})
    assert str(info.value) == (
        f"config file {str(path)!r}: invalid YAML value (month must be in 1..12)"
    )


def test_invalid_yaml_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, "upstream:\n  token: abc\n  username: [unclosed\nlisten: x\n")
    with pytest.raises(ConfigError) as info:
        load_config(path, {})
    message = str(info.value)
    assert message.startswith(f"config file {str(path)!r}: ")
    assert "at line 4, column" in message


def test_tab_indented_yaml_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, "upstream:\n\ttoken: abc\n")
    with pytest.raises(ConfigError) as info:
        load_config(path, {})
    assert str(info.value) == (
        f"config file {str(path)!r}: found character '\\t' that cannot start any token "
        "at line 2, column 1"
    )


# --- masking, warnings, sharding --------------------------------------------------------------
SECRETS = {
    "token": "tok-SECRET-1",
    "read_token": "read-SECRET-2-0123",
    "write_token": "write-SECRET-3-0123",
}


def test_masked_dict_masks_every_secret() -> None:
    s = parse_config(
        {
            "upstream": {"token": SECRETS["token"]},
            "admin": {
                "enabled": True,
                "read_token": SECRETS["read_token"],
                "write_token": SECRETS["write_token"],
            },
        },
        {},
    )
    data = masked_dict(s)
    dumped = yaml.safe_dump(data)
    for secret in SECRETS.values():
        assert secret not in dumped
    assert data["upstream"]["token"] == SECRET_MASK
    assert data["admin"] == {
        "enabled": True,
        "read_token": SECRET_MASK,
        "write_token": SECRET_MASK,
        "read_token_file": "",
        "write_token_file": "",
        "replicas_per_shard": 1,
        "auth_failures_per_minute": 10,
        "upstream_concurrency": 2,
        "upstream_deadline_seconds": 15.0,
        "talking_head_reads_per_day": 50,
        "reads_per_minute": 30,
        "state_file": "",
        "trusted_proxy_header": "",
    }
    assert data["shard"] == "0/1"


def test_masked_dict_masks_the_password_and_every_field_marked_secret() -> None:
    s = parse_config({"upstream": {"username": "ops", "password": "pw-SECRET-4"}}, {})
    data = masked_dict(s)
    assert data["upstream"]["password"] == SECRET_MASK
    assert data["upstream"]["username"] == "ops"
    assert "pw-SECRET-4" not in yaml.safe_dump(data)
    # Every field marked secret in the dataclasses is one masked_dict masks.
    marked = {
        (section, f.name)
        for section, obj in (("upstream", s.upstream), ("admin", s.admin))
        for f in dataclasses.fields(obj)
        if f.metadata.get("secret")
    }
    assert marked == {
        ("upstream", "token"),
        ("upstream", "password"),
        ("admin", "read_token"),
        ("admin", "write_token"),
    }
    assert set(s.secrets()) == {"pw-SECRET-4"}


def test_masked_dict_round_trips_through_yaml_and_parses_again() -> None:
    s = parse_config(
        with_token(accounts=[{"name": "acme", "dvr_streams": ["live/main"]}], shard="1/2"), {}
    )
    again = parse_config(yaml.safe_load(yaml.safe_dump(masked_dict(s))), {})
    assert again.accounts == s.accounts
    assert again.shard == s.shard
    assert again.upstream.token == SECRET_MASK


def test_default_talking_head_interval_has_no_warning() -> None:
    assert warnings(parse_config(TOKEN, {})) == []


def test_costly_talking_head_interval_warns_with_the_numbers() -> None:
    s = parse_config(with_token(talking_head={"interval_seconds": 3600}), {})
    assert warnings(s) == [
        "talking_head.interval_seconds: 3600 s spends 720 of the 1500 talking-head requests "
        "a month per account (more than 10%); 17280 s or more stays under 10%"
    ]


def test_talking_head_at_exactly_ten_percent_does_not_warn() -> None:
    assert warnings(parse_config(with_token(talking_head={"interval_seconds": 17280}), {})) == []


def test_disabled_talking_head_spends_nothing() -> None:
    s = parse_config(with_token(talking_head={"enabled": False, "interval_seconds": 60}), {})
    assert warnings(s) == []


def test_low_traffic_delay_warns() -> None:
    s = parse_config(with_token(traffic={"delay_seconds": 30}), {})
    assert warnings(s) == [
        "traffic.delay_seconds: 30 s reads minutes before their figures settle; "
        "120 s or more is recommended"
    ]


def test_stable_hash_is_fnv1a_32() -> None:
    assert stable_hash("") == 0x811C9DC5
    assert stable_hash("a") == 0xE40C292C
    assert stable_hash("foobar") == 0xBF9CF968


def test_every_account_has_exactly_one_shard() -> None:
    names = [f"account-{i}" for i in range(600)]
    shards = [Shard(i, 3) for i in range(3)]
    owners = {name: [s.index for s in shards if s.owns(name)] for name in names}
    assert all(len(o) == 1 for o in owners.values())
    counts = collections.Counter(o[0] for o in owners.values())
    assert all(150 <= c <= 250 for c in counts.values()), counts


def test_shard_assignment_is_stable_across_processes() -> None:
    # Pinned: a change here moves accounts between replicas of running deployments.
    assert [i for i in range(4) if Shard(i, 4).owns("demo-media")] == [
        stable_hash("demo-media") % 4
    ]
    assert stable_hash("demo-media") == 0x630FDCAF
    assert Shard(0, 1).owns("anything")


def test_shard_cannot_be_built_out_of_range() -> None:
    with pytest.raises(ValueError, match="need 0 <= index < count"):
        Shard(2, 2)


def test_settings_are_frozen() -> None:
    s = parse_config(TOKEN, {})
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.listen = "x"  # type: ignore[misc]
    assert isinstance(s, Settings)


@pytest.mark.parametrize(
    ("traffic", "cost", "one_minute"),
    [
        # the default: 2 first reads + a settle pair every 5 minutes; on a platform that
        # answers 1-minute windows only, a settle pair every minute
        ({}, 2.4, 4.0),
        ({"revisit_minutes": 0}, 2.0, 2.0),
        # + a pair per 5 minutes at 15 (joining two 5-minute runs would read their oldest
        # minutes 9 minutes late, more than tolerance_minutes: 5) and per 10 minutes at 60
        ({"revisit_minutes": [5, 15, 60]}, 3.0, 8.0),
        ({"revisit_minutes": [1, 4]}, 5.0, 6.0),  # at 4: runs of 2 minutes (tolerance 2)
        ({"revisit_minutes": [2, 1440], "per_resource": False}, 1.6, 3.0),
    ],
)
def test_check_config_notes_what_the_settle_schedule_costs(
    traffic: dict[str, Any], cost: float, one_minute: float
) -> None:
    settings = parse_config(with_token(traffic=traffic))
    assert traffic_requests_per_minute(settings) == pytest.approx(cost)
    (note,) = notes(settings)
    assert f"cost {cost:.2f} metrics requests per minute per account" in note
    assert f"{one_minute:.2f} on a platform that answers 1-minute windows only" in note
    assert "cdnvideo_traffic_late_share{after_minutes}" in note
