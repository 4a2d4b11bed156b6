"""Config rules: each is the text docs/configuration.md shows and the check that enforces it.

A field states its rule once, in its metadata (``settings._doc(..., rule=...)``); the loader
runs every field's check after parsing (``check_settings``) and the docs generator prints the
same rule's text. A check gets the dotted key (for the message), the value and the section
object holding it (for rules that involve a sibling field, such as the login's two halves).
The few rules enforced while parsing instead (the ``INDEX/COUNT`` shard syntax) or at start-up
(the web configuration file) say where in ``checked_by``.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from exporter.support.logs import strip_userinfo

Check = Callable[[str, Any, Any], None]  # (key, value, section) -> raises ConfigError


class ConfigError(ValueError):
    """A config value is invalid; the message names the key and what is wrong.

    ``problems`` holds every problem found (check-config prints one a line); the message is
    them joined by newlines.
    """

    def __init__(self, message: str, problems: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.problems: tuple[str, ...] = tuple(problems) or (message,)

    @classmethod
    def of(cls, problems: Sequence[str]) -> ConfigError:
        return cls("\n".join(problems), problems)


@dataclass(frozen=True)
class Rule:
    """What values a key accepts: ``text`` for the docs, ``check`` to enforce it (or
    ``checked_by``: where it is enforced when that is not the loader's field pass)."""

    text: str
    check: Check | None = None
    checked_by: str = ""

    def __post_init__(self) -> None:
        if (self.check is None) == (not self.checked_by):
            raise ValueError(f"rule {self.text!r}: give exactly one of check and checked_by")


def shown(value: Any, secret: bool = False, why: str = "a secret") -> str:
    """A bad value as an error quotes it: a secret only by its type (the message ends up in
    terminals and CI logs), anything else cut short."""
    if secret:
        return f"a {type(value).__name__} (not shown, {why})"
    text = strip_userinfo(repr(value))
    if len(text) <= 120:
        return text
    # Never cut a quoted value in half: the CLI masks quoted secrets only when whole.
    size = f" of {len(value)} items" if isinstance(value, list | dict) else ""
    return f"a {type(value).__name__}{size} (too long to show)"


# --- generic rules -------------------------------------------------------------------------
def positive() -> Rule:
    def check(key: str, value: float, _: Any) -> None:
        if value <= 0:
            raise ConfigError(f"{key}: must be greater than 0, got {value}")

    return Rule("> 0", check)


def at_least(low: float, text: str = "") -> Rule:
    def check(key: str, value: float, _: Any) -> None:
        if value < low:
            raise ConfigError(f"{key}: must be {low} or more, got {value}")

    return Rule(text or f">= {low:g}", check)


def one_of(*values: str) -> Rule:
    listed = ", ".join(values[:-1]) + " or " + values[-1]

    def check(key: str, value: str, _: Any) -> None:
        if value not in values:
            raise ConfigError(f"{key}: expected {listed}, got {value!r}")

    return Rule(listed, check)


def regex() -> Rule:
    def check(key: str, value: str, _: Any) -> None:
        try:
            re.compile(value)
        except (re.error, OverflowError, RecursionError) as exc:
            raise ConfigError(f"{key}: not a valid regular expression ({exc})") from None

    return Rule("valid Python regular expression", check)


def regexes() -> Rule:
    """A list of regular expressions; the error names the one that is wrong by its index."""
    one = regex().check
    assert one is not None

    def check(key: str, value: tuple[str, ...], section: Any) -> None:
        for i, pattern in enumerate(value):
            one(f"{key}[{i}]", pattern, section)

    return Rule("valid Python regular expressions", check)


def custom(text: str, check: Check) -> Rule:
    return Rule(text, check)


# --- rules of particular keys --------------------------------------------------------------
def check_base_url(key: str, url: str, _: Any) -> None:
    expected = "expected an http(s) URL such as https://api.cdnvideo.ru"
    try:
        parts = urlsplit(url)
        port_ok = parts.port is None or parts.port > 0
    except ValueError as exc:
        raise ConfigError(f"{key}: {expected}, got {shown(url)} ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname or not port_ok:
        raise ConfigError(f"{key}: {expected}, got {shown(url)}")
    if any(c.isspace() for c in url):
        raise ConfigError(f"{key}: must not contain spaces, got {shown(url)}")
    if parts.username or parts.password:
        raise ConfigError(f"{key}: must not carry credentials; use token or password")
    if parts.query or parts.fragment:
        raise ConfigError(f"{key}: must not carry a query or fragment, got {shown(url)}")


def check_token(key: str, token: str, up: Any) -> None:
    section = key.rpartition(".")[0]
    if token and (up.username or up.password):
        raise ConfigError(
            f"{section}: give either token (CDNVIDEO_TOKEN) or username + password "
            "(CDNVIDEO_USERNAME, CDNVIDEO_PASSWORD), not both"
        )
    if not token and not up.username and not up.password:
        raise ConfigError(
            f"{section}: no credentials; set {section}.token (or CDNVIDEO_TOKEN) "
            f"or {section}.username + {section}.password"
        )


def half_of_login(other: str) -> Check:
    """``username`` needs ``password`` and the other way round (without a token)."""

    def check(key: str, value: str, up: Any) -> None:
        if not value and getattr(up, other) and not up.token:
            raise ConfigError(f"{key}: required with the other half of the login")

    return check


def check_account_name(key: str, name: str, _: Any) -> None:
    if not name:
        raise ConfigError(f"{key}: required, the account name of the API paths")
    if "/" in name or name in (".", "..") or name.strip() != name:
        raise ConfigError(f"{key}: {name!r} is not a valid account name")


def check_streams(key: str, streams: tuple[str, ...], _: Any) -> None:
    for j, stream in enumerate(streams):
        if any(part in ("", ".", "..") for part in stream.split("/")):
            raise ConfigError(
                f"{key}[{j}]: {stream!r} is not a stream name (no empty, '.' or '..' path segments)"
            )
        if stream in streams[:j]:
            raise ConfigError(f"{key}[{j}]: {stream!r} is listed twice")


def check_accounts(key: str, accounts: Sequence[Any] | None, _: Any) -> None:
    """The list itself; each account's fields are checked by their own rules."""
    if accounts is None:
        return
    if not accounts:
        raise ConfigError(
            f"{key}: the list is empty; name at least one account, "
            "or leave the key out to discover accounts from the platform"
        )
    seen: set[str] = set()
    for i, acc in enumerate(accounts):
        if acc.name in seen:
            raise ConfigError(f"{key}[{i}].name: {acc.name!r} is listed twice")
        seen.add(acc.name)


MIN_ADMIN_TOKEN_LENGTH = 16
GENERATE_PER_MINUTE = 10  # the platform's talking-head generate limit per account
GENERATE_TOKEN_HINT = 'python -c "import secrets; print(secrets.token_urlsafe(32))"'


def _token_length(key: str, token: str) -> None:
    if token and len(token) < MIN_ADMIN_TOKEN_LENGTH:
        raise ConfigError(
            f"{key}: at least {MIN_ADMIN_TOKEN_LENGTH} characters, got {len(token)}; "
            f"generate one with {GENERATE_TOKEN_HINT}"
        )


def check_read_token(key: str, token: str, admin: Any) -> None:
    if token and token == admin.write_token:
        raise ConfigError(f"{key}: must differ from {key.rpartition('.')[0]}.write_token")
    _token_length(key, token)


def check_admin_enabled(key: str, enabled: bool, admin: Any) -> None:
    if enabled and not admin.write_token:
        section = key.rpartition(".")[0]
        raise ConfigError(
            f"{section}.write_token: required when {key} is true (set CDNVIDEO_ADMIN_WRITE_TOKEN)"
        )


def check_write_token(key: str, token: str, _: Any) -> None:
    _token_length(key, token)


def check_replicas(key: str, replicas: int, _: Any) -> None:
    if not 1 <= replicas <= GENERATE_PER_MINUTE:
        raise ConfigError(
            f"{key}: must be 1-{GENERATE_PER_MINUTE} (each replica allows "
            f"{GENERATE_PER_MINUTE} // replicas generate requests a minute), got {replicas}"
        )


def check_auth_failures(key: str, value: int, _: Any) -> None:
    if value < 0:
        raise ConfigError(f"{key}: must be 0 (no throttle) or more, got {value}")


_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")  # an HTTP token (RFC 9110)


def check_header_name(key: str, value: str, _: Any) -> None:
    if value and not _HEADER_NAME.fullmatch(value):
        raise ConfigError(f"{key}: expected an HTTP header name such as X-Forwarded-For")


_HOST = re.compile(r"\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]*")


def split_host_port(value: str, key: str, allow_any: bool = False) -> tuple[str, int]:
    """``HOST:PORT`` (``[::1]:9877`` for IPv6, ``:9877`` for every interface) -> (host, port).

    ``allow_any`` accepts port 0 (the OS picks a free port), for the demo and tests.
    """
    host, sep, port = value.rpartition(":")
    low = 0 if allow_any else 1
    if not sep or not re.fullmatch(r"[0-9]{1,5}", port) or not low <= int(port) < 65536:
        raise ConfigError(f"{key}: expected HOST:PORT with a port {low}-65535, got {value!r}")
    if not _HOST.fullmatch(host):
        raise ConfigError(
            f"{key}: {host!r} is not a host name or address "
            f"(write IPv6 addresses in brackets, e.g. [::1]:9877), got {value!r}"
        )
    return host.strip("[]") or "0.0.0.0", int(port)


def check_listen(key: str, value: str, _: Any) -> None:
    split_host_port(value, key)


def check_section(obj: Any, prefix: str, errors: list[str] | None = None) -> None:
    """Run the rule of every field of ``obj`` (a settings dataclass), in field order; nested
    sections and lists of sections are walked (``accounts[0].name``). With ``errors``, every
    refusal is added to it instead of raised, so all of them are reported at once."""
    for f in dataclasses.fields(obj):
        key = f"{prefix}.{f.name}" if prefix else f.name
        check_value(f.metadata.get("rule"), key, getattr(obj, f.name), obj, errors)


def check_value(
    rule: Rule | None, key: str, value: Any, owner: Any, errors: list[str] | None = None
) -> None:
    """Run ``rule`` over the value of ``key`` (``owner`` holds it), then the rules inside the
    value when it is a section or a list of them (``check_section``)."""
    if rule is not None and rule.check is not None:
        try:
            rule.check(key, value, owner)
        except ConfigError as exc:
            if errors is None:
                raise
            errors.extend(p for p in exc.problems if p not in errors)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        check_section(value, key, errors)
    elif isinstance(value, tuple) and value and dataclasses.is_dataclass(value[0]):
        for i, item in enumerate(value):
            check_section(item, f"{key}[{i}]", errors)
