"""Secret masking in logs: by key name, by known value, in URLs, in free text, in exceptions."""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import structlog

from exporter.support.logs import (
    MASK,
    MAX_LEARNED_SECRETS,
    MAX_SECRET_LENGTH,
    Redactor,
    configure_logging,
    is_secret_key,
    strip_userinfo,
)


@pytest.fixture(autouse=True)
def _restore_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    structlog.reset_defaults()
    root.handlers[:] = handlers
    root.setLevel(level)


def redact(event: dict[str, object], *secrets: str) -> dict[str, object]:
    return dict(Redactor(secrets)(None, "info", dict(event)))


# --- by key name ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "key",
    [
        "token",
        "password",
        "Authorization",
        "CDN-AUTH-TOKEN",
        "target_key",
        "stream_key",
        "utoken",
        "read_token",
        "admin_token",
        "backup_password",
        "client_secret",
    ],
)
def test_secret_named_key_is_masked(key: str) -> None:
    assert redact({"event": "x", key: "s3cr3t-value"})[key] == MASK


@pytest.mark.parametrize("key", ["tokens_left", "lifetime_seconds", "username", "event", "host"])
def test_ordinary_key_is_kept(key: str) -> None:
    assert redact({key: "plain"})[key] == "plain"
    assert not is_secret_key(key)


def test_empty_or_boolean_secret_fields_stay_readable() -> None:
    out = redact({"password": "", "token": None, "has_token": True})
    assert out == {"password": "", "token": None, "has_token": True}


def test_nested_dicts_and_lists_are_masked() -> None:
    event = {
        "body": {
            "name": "r1",
            "restreams": [
                {"target_url": "rtmp://a.example/live", "target_key": "key-123", "login": "bob"},
                {"backup": {"password": "bk-pass", "target_url": "rtmp://u:pw1@b.example/app"}},
            ],
        },
        "headers": ({"CDN-AUTH-TOKEN": "tok-abc"},),
    }
    out = redact(event)
    assert out["body"] == {
        "name": "r1",
        "restreams": [
            {"target_url": "rtmp://a.example/live", "target_key": MASK, "login": "bob"},
            {"backup": {"password": MASK, "target_url": "rtmp://b.example/app"}},
        ],
    }
    assert out["headers"] == [{"CDN-AUTH-TOKEN": MASK}]


# --- by value ---------------------------------------------------------------------------------
def test_known_secret_value_is_masked_inside_text() -> None:
    out = redact(
        {"event": "sent cdn1_abcdef to upstream", "detail": ["x cdn1_abcdef y"]}, "cdn1_abcdef"
    )
    assert out == {"event": f"sent {MASK} to upstream", "detail": [f"x {MASK} y"]}


def test_secret_learned_at_run_time_is_masked_from_then_on() -> None:
    r = Redactor()
    assert r.text("key zz-stream-key-9") == "key zz-stream-key-9"
    r.add("zz-stream-key-9", "", "ab")  # empty and very short values are not learned
    assert r.text("key zz-stream-key-9 ab") == f"key {MASK} ab"


def test_longer_secret_wins_over_its_prefix() -> None:
    assert Redactor(["abc", "abcdef"]).text("abcdef") == MASK


# --- learning cannot be turned against the log -----------------------------------------------
def test_learned_data_secrets_never_erase_the_structure_of_an_event() -> None:
    r = Redactor(["config-token-123"])
    r.learn("event", "audit", "restream_create", "127.0.0.1", "POST /api/v1")
    event = {
        "event": "audit",
        "operation": "restream_create",
        "route": "POST /api/v1/restream/{account}/resources",
        "remote": "127.0.0.1",
        "target": "audit",
        "error": "audit refused",
    }
    out = r(None, "info", dict(event))
    assert out == {**event, "error": f"{MASK} refused"}  # free text only
    # Credentials are still masked there (a stdlib message may carry one).
    assert r(None, "info", {"event": "sent config-token-123"}) == {"event": f"sent {MASK}"}


def test_learned_secrets_are_capped_and_the_least_recent_go_first() -> None:
    r = Redactor(["config-token-123"])
    r.learn("keep-me-0000")
    for i in range(MAX_LEARNED_SECRETS + 100):
        r.learn(f"key-{i:06d}")
        if i % 1000 == 0:
            r.learn("keep-me-0000")  # seen again: stays
    assert len(r) == MAX_LEARNED_SECRETS + 1  # + the config credential
    assert r.text("key-000000 keep-me-0000 config-token-123") == f"key-000000 {MASK} {MASK}"
    assert r.text(f"key-{MAX_LEARNED_SECRETS + 99:06d}") == MASK


def test_a_value_longer_than_the_limit_is_not_learned() -> None:
    r = Redactor()
    r.learn("x" * (MAX_SECRET_LENGTH + 1), "y" * MAX_SECRET_LENGTH)
    assert len(r) == 1
    assert r.text("x" * (MAX_SECRET_LENGTH + 1)) == "x" * (MAX_SECRET_LENGTH + 1)


def test_learning_thousands_of_secrets_one_by_one_compiles_no_pattern(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    compiled: list[object] = []
    real_compile = re.compile

    def spy(pattern: Any, flags: int = 0) -> re.Pattern[Any]:
        compiled.append(pattern)
        return real_compile(pattern, flags)

    r = Redactor()
    monkeypatch.setattr(re, "compile", spy)
    for i in range(3000):  # a pattern rebuilt on each add took minutes (bench/timings.py)
        r.add(f"token-{i:05d}-{'z' * 40}")
    line = "GET /x " * 20 + f"token-02999-{'z' * 40}"
    assert r.text(line) == "GET /x " * 20 + MASK
    assert compiled == []


def test_thousands_of_secrets_with_one_prefix_are_told_apart() -> None:
    r = Redactor()
    r.learn(*(f"k0-{i:06d}-{'x' * 40}" for i in range(MAX_LEARNED_SECRETS)))
    line = f"a k0-000017-{'x' * 40} b k0-{'x' * 60} c k0-{MAX_LEARNED_SECRETS - 1:06d}-{'x' * 40}"
    assert r.text(line) == f"a {MASK} b k0-{'x' * 60} c {MASK}"  # speed: bench/timings.py


def test_overlapping_secrets_mask_leftmost_then_longest() -> None:
    r = Redactor(["abcdef", "cdefgh", "abc"])
    assert r.text("xabcdefgh abcx") == f"x{MASK}gh {MASK}x"


def test_bytes_values_are_decoded_and_masked() -> None:
    assert redact({"body": b"password=hunter2&x=1"}) == {"body": f"password={MASK}&x=1"}


# --- URL userinfo and free text ---------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("rtmp://user:pass@host/app", "rtmp://host/app"),
        (
            "to rtmp://user:p@ss@live.example:1935/app/key now",
            "to rtmp://live.example:1935/app/key now",
        ),
        ("https://token@api.example/x", "https://api.example/x"),
        ('{"url": "rtmps://u:p@h"}', '{"url": "rtmps://h"}'),
        ("mail bob@example.com and http://h/p@x", "mail bob@example.com and http://h/p@x"),
    ],
)
def test_url_userinfo_is_stripped(text: str, expected: str) -> None:
    assert strip_userinfo(text) == expected
    assert Redactor().text(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("username=ops&password=hunter2", f"username=ops&password={MASK}"),
        ("GET /x?token=abc123&y=1", f"GET /x?token={MASK}&y=1"),
        (
            "RestreamEntry(login='bob', password='p w')",
            f"RestreamEntry(login='bob', password='{MASK}')",
        ),
        ('{"target_key": "live_9", "n": 2}', f'{{"target_key": "{MASK}", "n": 2}}'),
        ("{'token': 'abc', 'lifetime': 5}", f"{{'token': '{MASK}', 'lifetime': 5}}"),
        ("CDN-AUTH-TOKEN: abc123", f"CDN-AUTH-TOKEN: {MASK}"),
        ("Authorization: Bearer xyz.789", f"Authorization: {MASK}"),
        # error messages that merely name a secret key stay readable
        ("upstream.password: required with the other half of the login",) * 2,
        ("token_renewed reason=expired",) * 2,
    ],
)
def test_secret_key_value_pairs_in_text_are_masked(text: str, expected: str) -> None:
    assert Redactor().text(text) == expected


# --- exceptions and objects -------------------------------------------------------------------
def test_exception_value_is_rendered_as_masked_text() -> None:
    exc = RuntimeError("connect rtmp://u:pw@h/app failed with tok-999")
    out = redact({"error": exc}, "tok-999")
    assert out == {"error": f"RuntimeError: connect rtmp://h/app failed with {MASK}"}


@dataclass(frozen=True)
class Entry:
    target_url: str
    target_key: str
    password: str


def test_dataclass_value_is_masked_field_by_field() -> None:
    out = redact({"entry": Entry("rtmp://u:p@h/app", "k-1", "pw-1")})
    assert out == {
        "entry": {
            "type": "Entry",
            "target_url": "rtmp://h/app",
            "target_key": MASK,
            "password": MASK,
        }
    }


def test_other_objects_become_masked_text() -> None:
    class Opaque:
        def __repr__(self) -> str:
            return "Opaque(password='pw-2')"

    assert redact({"obj": Opaque()}) == {"obj": f"Opaque(password='{MASK}')"}


# --- the configured pipeline ------------------------------------------------------------------
PLANTED = ("tok-PLANTED-1", "pw-PLANTED-2", "key-PLANTED-3", "login-PLANTED-4", "hdr-PLANTED-5")


def lines(buf: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in buf.getvalue().splitlines()]


def test_json_log_output_contains_no_planted_secret() -> None:
    buf = io.StringIO()
    redactor = configure_logging(level="debug", fmt="json", stream=buf)
    redactor.add(PLANTED[0])  # e.g. a token fetched at run time
    log = structlog.get_logger("test")
    log.info("token_renewed", token=PLANTED[0], lifetime_seconds=21599)
    log.info("login", form={"username": "ops", "password": PLANTED[1]})
    log.warning("restream", entries=[{"target_key": PLANTED[2]}])
    log.info("request", url=f"rtmp://ops:{PLANTED[3]}@live.example/app")
    log.info(f"sent header with {PLANTED[0]} inside the message")
    log.debug("raw", body=f'{{"CDN-AUTH-TOKEN": "{PLANTED[4]}"}}')
    try:
        raise ValueError(f"upstream said no to {PLANTED[0]}")
    except ValueError:
        log.exception("poll_failed", area="dvr")
    logging.getLogger("aiohttp.client").warning("retrying password=%s", PLANTED[1])
    out = buf.getvalue()
    for secret in PLANTED:
        assert secret not in out
    records = lines(buf)
    assert [r["msg"] for r in records][:4] == ["token_renewed", "login", "restream", "request"]
    assert records[0]["token"] == MASK
    assert records[0]["lifetime_seconds"] == 21599
    assert records[3]["url"] == "rtmp://live.example/app"
    failed = records[6]
    assert failed["level"] == "error"
    assert "ValueError: upstream said no to ********" in str(failed["exception"])
    assert records[7] == {
        "ts": records[7]["ts"],
        "level": "warn",
        "msg": f"retrying password={MASK}",
        "caller": records[7]["caller"],
        "logger": "aiohttp.client",
    }


def test_level_filters_structlog_and_stdlib_records() -> None:
    buf = io.StringIO()
    configure_logging(level="warning", fmt="json", stream=buf)
    structlog.get_logger().info("quiet")
    logging.getLogger("aiohttp.access").info("quiet too")
    structlog.get_logger().warning("loud")
    assert [r["msg"] for r in lines(buf)] == ["loud"]


def test_apscheduler_says_only_its_errors_the_scheduler_says_the_rest() -> None:
    buf = io.StringIO()
    configure_logging(level="info", fmt="json", stream=buf)
    logging.getLogger("apscheduler.executors.default").info('Running job "traffic/acme/"')
    logging.getLogger("apscheduler.scheduler").warning("Execution of job skipped")
    logging.getLogger("apscheduler.executors.default").error("Error running job")
    structlog.get_logger().info("info")
    assert [r["msg"] for r in lines(buf)] == ["Error running job", "info"]


def test_auto_format_is_json_when_not_a_terminal() -> None:
    buf = io.StringIO()
    configure_logging(fmt="auto", stream=buf)
    structlog.get_logger().info("hello", n=1)
    assert lines(buf)[0]["msg"] == "hello"


def test_console_format_masks_too() -> None:
    buf = io.StringIO()
    configure_logging(fmt="console", stream=buf)
    structlog.get_logger().info("hello", password="pw-console-1")
    out = buf.getvalue()
    assert "hello" in out
    assert "pw-console-1" not in out
    assert MASK in out


def test_configuring_twice_keeps_one_stdlib_handler() -> None:
    first, second = io.StringIO(), io.StringIO()
    configure_logging(fmt="json", stream=first)
    configure_logging(fmt="json", stream=second)
    logging.getLogger("x").warning("once")
    assert first.getvalue() == ""
    assert [r["msg"] for r in lines(second)] == ["once"]


# --- one notion of a secret: names by structure, URLs by structure ----------------------------
@pytest.mark.parametrize(
    "key",
    ["new_password", "client_key", "passphrase", "X-Amz-Signature", "hmac_sig", "basic_auth"],
)
def test_names_that_only_end_like_a_secret_are_masked(key: str) -> None:
    assert redact({"event": "x", key: "s3cr3t-value"})[key] == MASK
    assert Redactor().text(f"{key}=s3cr3t-value") == f"{key}={MASK}"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "srt://h:9000?streamid=#!::r=live/x,m=publish&passphrase=pp-1&latency=200",
            f"srt://h:9000?streamid={MASK}&passphrase={MASK}&latency=200",
        ),
        # Nothing ends a query value but "&" or the next URL: the words after it go with it.
        ("push to rtmp://h/app?token=abc1 failed", f"push to rtmp://h/app?token={MASK}"),
        (
            "https://v.example/f.mp4?expires=17&ip=10.0.0.1&sig=ff00",
            f"https://v.example/f.mp4?expires={MASK}&ip={MASK}&sig={MASK}",
        ),
        (
            '{"url": "srt://h?streamid=s1&mode=caller"}',
            f'{{"url": "srt://h?streamid={MASK}&mode=caller"}}',
        ),
        ("rtmp://h/app?vhost=live.example", "rtmp://h/app?vhost=live.example"),
    ],
)
def test_url_query_values_are_masked_but_the_allowed_names(text: str, expected: str) -> None:
    assert Redactor().text(text) == expected


def test_an_audit_line_keeps_account_and_role_whatever_was_learned() -> None:
    r = Redactor()
    r.learn("demo-media", "write")  # a body's secret equal to an account name and a role word
    event = {
        "event": "audit",
        "account": "demo-media",
        "role": "write",
        "outcome": "ok",
        "status": 200,
        "error": "demo-media write",
    }
    out = r(None, "info", dict(event))
    assert out == {**event, "error": f"{MASK} {MASK}"}


def test_only_secret_named_query_values_are_learned() -> None:
    from exporter.support.urls import url_secrets

    url = "https://v.example/f.mp4?expires=1767225600&ip=10.0.0.1&sig=ff00aa&streamid=s1"
    assert url_secrets(url) == ["ff00aa", "s1"]


# --- context bound once per poll --------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["json", "logfmt"])
def test_bound_context_writes_the_same_line_as_fields_passed_first(fmt: str) -> None:
    """A poll binds ``area``/``account`` once (structlog contextvars): its lines keep the bytes
    they had when each call passed them first, whatever was bound earlier in the process."""
    from structlog.contextvars import bound_contextvars

    with bound_contextvars(account="earlier", job="x"):  # variables made in another order
        pass
    passed, bound = io.StringIO(), io.StringIO()
    configure_logging(level="info", fmt=fmt, stream=passed)
    structlog.get_logger().warning("poll_failed", area="dvr", account="acme", error="E", job="j")
    configure_logging(level="info", fmt=fmt, stream=bound)
    with bound_contextvars(area="dvr", account="acme"):
        structlog.get_logger().warning("poll_failed", error="E", job="j")
    structlog.get_logger().warning("after")

    def stamped(text: str) -> list[str]:  # the time and the calling line differ, nothing else
        text = re.sub(r'"ts": "[^"]+"|ts=\S+', "T", text)
        return re.sub(r'"caller": "[^"]+"|caller=\S+', "C", text).splitlines()

    assert stamped(bound.getvalue())[0] == stamped(passed.getvalue())[0]
    assert "acme" not in bound.getvalue().splitlines()[1]
