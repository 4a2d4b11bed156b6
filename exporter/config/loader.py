"""Read YAML, expand ${VAR}, apply CDNVIDEO_* overrides, and refuse bad values by key."""

from __future__ import annotations

import dataclasses
import difflib
import itertools
import math
import os
import re
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any, get_type_hints
from urllib.parse import urlsplit

import yaml

from exporter.config.settings import (
    ENV_OVERRIDES,
    RESOURCE_STATUS_CODES,
    SECTIONS,
    SHARD_ENV,
    TOP_LEVEL_KEYS,
    AccountSettings,
    ConfigError,
    Settings,
    Shard,
    split_host_port,
)
from exporter.support.logs import strip_userinfo

MIN_ADMIN_TOKEN_LENGTH = 16
GENERATE_PER_MINUTE = 10  # the platform's talking-head generate limit per account
GENERATE_TOKEN_HINT = 'python -c "import secrets; print(secrets.token_urlsafe(32))"'
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def expand_env(text: str, env: Mapping[str, str]) -> str:
    """Replace ``${VAR}`` and ``${VAR:-default}``; an unset variable becomes the default or ''."""
    return _VAR.sub(lambda m: env.get(m.group(1)) or (m.group(2) or ""), text)


class _Expanded(str):
    """A YAML string that held ``${VAR}``: its type comes from the key it fills.

    Expansion happens after parsing, so a secret full of YAML syntax (``p@ss #1: x``) is
    taken literally instead of being cut at ``#`` or breaking the document; a number such as
    ``timeout_seconds: ${TIMEOUT:-10}`` is still read as a number.
    """


def _expand_tree(node: Any, env: Mapping[str, str]) -> Any:
    if isinstance(node, str):
        return _Expanded(expand_env(node, env)) if _VAR.search(node) else node
    if isinstance(node, dict):
        return {k: _expand_tree(v, env) for k, v in node.items()}
    if isinstance(node, list):
        return [_expand_tree(v, env) for v in node]
    return node


def _typed(value: Any) -> Any:
    """The YAML value an expanded string stands for where a non-string is expected."""
    if not isinstance(value, _Expanded):
        return value
    text = str(value).strip()
    if not text:
        return None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def _hint(key: str, known: tuple[str, ...] | list[str]) -> str:
    close = difflib.get_close_matches(key, list(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _shown(value: Any, secret: bool = False, why: str = "a secret") -> str:
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


def _coerce(value: Any, typ: Any, key: str, secret: bool = False) -> Any:
    got = _shown(value, secret)
    if typ is bool:
        if isinstance(value, bool):
            return value
        raise ConfigError(f"{key}: expected true or false, got {got}")
    if typ is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{key}: expected a whole number, got {got}")
        return value
    if typ is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{key}: expected a number, got {got}")
        try:
            number = float(value)  # an int beyond the float range overflows
        except OverflowError:
            number = math.inf
        if not math.isfinite(number):
            raise ConfigError(f"{key}: expected a finite number, got {got}")
        return number
    if typ is str:
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise ConfigError(f"{key}: expected a string, got {got}")
        return str(value)
    if typ == int | tuple[int, ...]:  # one number, or a list of numbers
        if isinstance(value, list):
            for i, v in enumerate(value):
                _coerce(v, int, f"{key}[{i}]")
            return tuple(value)
        return _coerce(value, int, key)
    if typ == tuple[str, ...]:
        if isinstance(value, str) and value:  # a single name where a list was meant
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise ConfigError(f"{key}: expected a list of non-empty strings, got {got}")
        return tuple(value)
    raise AssertionError(f"unsupported config type {typ!r}")  # pragma: no cover


def _section(cls: type[Any], raw: Any, prefix: str) -> Any:
    if raw is None:
        raw = {}
    fields = {f.name: f for f in dataclasses.fields(cls)}
    if not isinstance(raw, dict):
        holds_secrets = any(f.metadata.get("secret") for f in fields.values())
        got = _shown(raw, holds_secrets, "the section holds secrets")
        raise ConfigError(f"{prefix}: expected a mapping, got {got}")
    hints = get_type_hints(cls)
    names = tuple(fields)
    values: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in names:
            raise ConfigError(f"{prefix}.{key}: unknown key{_hint(str(key), names)}")
        if hints[key] is not str:
            value = _typed(value)
        if value is None:
            continue
        secret = bool(fields[key].metadata.get("secret"))
        values[key] = _coerce(value, hints[key], f"{prefix}.{key}", secret)
    return cls(**values)


def _parse_shard(raw: Any, key: str = "shard") -> Shard:
    if raw is None:
        return Shard()
    text = str(raw)
    m = re.fullmatch(r"\s*([0-9]+)\s*/\s*([0-9]+)\s*", text)
    if not m:
        raise ConfigError(f"{key}: expected INDEX/COUNT such as 0/1, got {text!r}")
    index, count = int(m.group(1)), int(m.group(2))
    if count < 1 or index >= count:
        raise ConfigError(
            f"{key}: index must be below the count (0 <= index < count), got {text!r}"
        )
    return Shard(index, count)


def _check_stream(name: str, key: str) -> None:
    if any(part in ("", ".", "..") for part in name.split("/")):
        raise ConfigError(
            f"{key}: {name!r} is not a stream name (no empty, '.' or '..' path segments)"
        )


def _parse_accounts(raw: Any) -> tuple[AccountSettings, ...] | None:
    raw = _typed(raw)
    if raw is None:
        return None
    if not isinstance(raw, list):
        raise ConfigError(f"accounts: expected a list of accounts, got {_shown(raw)}")
    if not raw:
        raise ConfigError(
            "accounts: the list is empty; name at least one account, "
            "or leave the key out to discover accounts from the platform"
        )
    accounts = []
    seen: set[str] = set()
    for i, item in enumerate(raw):
        if isinstance(item, str):
            item = {"name": item}
        acc = _section(AccountSettings, item, f"accounts[{i}]")
        if not acc.name:
            raise ConfigError(f"accounts[{i}].name: required, the account name of the API paths")
        if "/" in acc.name or acc.name in (".", "..") or acc.name.strip() != acc.name:
            raise ConfigError(f"accounts[{i}].name: {acc.name!r} is not a valid account name")
        if acc.name in seen:
            raise ConfigError(f"accounts[{i}].name: {acc.name!r} is listed twice")
        seen.add(acc.name)
        for j, stream in enumerate(acc.dvr_streams):
            _check_stream(stream, f"accounts[{i}].dvr_streams[{j}]")
            if stream in acc.dvr_streams[:j]:
                raise ConfigError(f"accounts[{i}].dvr_streams[{j}]: {stream!r} is listed twice")
        accounts.append(acc)
    return tuple(accounts)


def _validate(s: Settings) -> None:
    up = s.upstream
    expected = "expected an http(s) URL such as https://api.cdnvideo.ru"
    try:
        parts = urlsplit(up.base_url)
        port_ok = parts.port is None or parts.port > 0
    except ValueError as exc:
        raise ConfigError(
            f"upstream.base_url: {expected}, got {_shown(up.base_url)} ({exc})"
        ) from None
    if parts.scheme not in ("http", "https") or not parts.hostname or not port_ok:
        raise ConfigError(f"upstream.base_url: {expected}, got {_shown(up.base_url)}")
    if any(c.isspace() for c in up.base_url):
        raise ConfigError(f"upstream.base_url: must not contain spaces, got {_shown(up.base_url)}")
    if parts.username or parts.password:
        raise ConfigError("upstream.base_url: must not carry credentials; use token or password")
    if parts.query or parts.fragment:
        raise ConfigError(
            f"upstream.base_url: must not carry a query or fragment, got {_shown(up.base_url)}"
        )
    if up.token and (up.username or up.password):
        raise ConfigError(
            "upstream: give either token (CDNVIDEO_TOKEN) or username + password "
            "(CDNVIDEO_USERNAME, CDNVIDEO_PASSWORD), not both"
        )
    if not up.token and not (up.username and up.password):
        if up.username or up.password:
            missing = "password" if up.username else "username"
            raise ConfigError(f"upstream.{missing}: required with the other half of the login")
        raise ConfigError(
            "upstream: no credentials; set upstream.token (or CDNVIDEO_TOKEN) "
            "or upstream.username + upstream.password"
        )
    _positive("upstream.timeout_seconds", up.timeout_seconds)
    _positive("upstream.max_concurrency", up.max_concurrency)
    _at_least("upstream.max_requests_per_minute", up.max_requests_per_minute, 0)
    t = s.traffic
    _at_least("traffic.delay_seconds", t.delay_seconds, 0)
    _check_schedule(t.revisit_minutes)
    _at_least("traffic.catch_up_minutes", t.catch_up_minutes, 0)
    _at_least("traffic.series_retention_hours", t.series_retention_hours, 0)
    _at_least("traffic.max_resources", t.max_resources, 0)
    for key in ("resources_include", "resources_exclude"):
        _check_regex(f"traffic.{key}", getattr(t, key))
    if t.resource_status_codes not in RESOURCE_STATUS_CODES:
        raise ConfigError(
            "traffic.resource_status_codes: expected `codes` or `classes`, "
            f"got {_shown(t.resource_status_codes)}"
        )
    for key in ("include", "exclude"):
        for i, pattern in enumerate(getattr(s.metrics, key)):
            _check_regex(f"metrics.{key}[{i}]", pattern)
    _positive("restream.interval_seconds", s.restream.interval_seconds)
    _positive("restream.history_interval_seconds", s.restream.history_interval_seconds)
    _positive("dvr.interval_seconds", s.dvr.interval_seconds)
    _positive("talking_head.interval_seconds", s.talking_head.interval_seconds)
    split_host_port(s.listen, "listen")
    if s.admin.enabled and not s.admin.write_token:
        raise ConfigError(
            "admin.write_token: required when admin.enabled is true "
            "(set CDNVIDEO_ADMIN_WRITE_TOKEN)"
        )
    if s.admin.read_token and s.admin.read_token == s.admin.write_token:
        raise ConfigError("admin.read_token: must differ from admin.write_token")
    if not 1 <= s.admin.replicas_per_shard <= GENERATE_PER_MINUTE:
        raise ConfigError(
            f"admin.replicas_per_shard: must be 1-{GENERATE_PER_MINUTE} (each replica allows "
            f"{GENERATE_PER_MINUTE} // replicas generate requests a minute), "
            f"got {s.admin.replicas_per_shard}"
        )
    if s.admin.auth_failures_per_minute < 0:
        raise ConfigError(
            "admin.auth_failures_per_minute: must be 0 (no throttle) or more, "
            f"got {s.admin.auth_failures_per_minute}"
        )
    for key in ("read_token", "write_token"):
        token = getattr(s.admin, key)
        if token and len(token) < MIN_ADMIN_TOKEN_LENGTH:
            raise ConfigError(
                f"admin.{key}: at least {MIN_ADMIN_TOKEN_LENGTH} characters, got {len(token)}; "
                f"generate one with {GENERATE_TOKEN_HINT}"
            )
    if s.log.level not in ("debug", "info", "warning", "error"):
        raise ConfigError(f"log.level: expected debug, info, warning or error, got {s.log.level!r}")
    if s.log.format not in ("auto", "console", "json"):
        raise ConfigError(f"log.format: expected auto, console or json, got {s.log.format!r}")


def _check_schedule(r: int | tuple[int, ...]) -> None:
    key = "traffic.revisit_minutes"
    if isinstance(r, int):
        if not 0 <= r <= 10:
            raise ConfigError(f"{key}: must be 0-10 (a re-read fits one 10-minute window), got {r}")
        return
    if not r:
        raise ConfigError(f"{key}: the list is empty; use 0 to turn settling off")
    if not 1 <= r[0] <= 10:
        raise ConfigError(
            f"{key}[0]: the first age must be 1-10 (its runs are read as one "
            f"window of up to 10 minutes), got {r[0]}"
        )
    for i, (a, b) in enumerate(itertools.pairwise(r), 1):
        if b <= a:
            raise ConfigError(f"{key}[{i}]: ages must rise, got {b} after {a}")
    if r[-1] > 1440:
        raise ConfigError(f"{key}[{len(r) - 1}]: at most 1440 (a day), got {r[-1]}")


def _check_regex(key: str, pattern: str) -> None:
    try:
        re.compile(pattern)
    except (re.error, OverflowError, RecursionError) as exc:
        raise ConfigError(f"{key}: not a valid regular expression ({exc})") from None


def _positive(key: str, value: float) -> None:
    if value <= 0:
        raise ConfigError(f"{key}: must be greater than 0, got {value}")


def _at_least(key: str, value: float, low: float) -> None:
    if value < low:
        raise ConfigError(f"{key}: must be {low} or more, got {value}")


def parse_config(raw: Any, env: Mapping[str, str] | None = None) -> Settings:
    """Turn a parsed YAML document into validated settings.

    ``${VAR}`` / ``${VAR:-default}`` inside string values expand from ``env`` (default: the
    process environment), then the ``CDNVIDEO_*`` overrides apply.
    """
    env = os.environ if env is None else env
    raw = _expand_tree(raw, env)
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"config: expected a mapping at the top level, got {_shown(raw)}")
    raw = dict(raw)
    for key in raw:
        if key not in TOP_LEVEL_KEYS:
            raise ConfigError(f"{key}: unknown key{_hint(str(key), TOP_LEVEL_KEYS)}")
    for var, (section, key) in ENV_OVERRIDES.items():
        if env.get(var):
            sec = raw.get(section)
            if sec is not None and not isinstance(sec, dict):
                continue  # _section reports the malformed section itself
            sec = dict(sec or {})
            sec[key] = env[var]
            raw[section] = sec
    sections = {name: _section(cls, raw.get(name), name) for name, cls in SECTIONS.items()}
    listen = _typed(raw.get("listen"))
    if listen is None:
        listen = Settings.listen
    if not isinstance(listen, str):
        raise ConfigError(f"listen: expected HOST:PORT, got {listen!r}")
    web_config_file = raw.get("web_config_file") or ""
    if not isinstance(web_config_file, str):
        raise ConfigError(f"web_config_file: expected a file path, got {_shown(web_config_file)}")
    if env.get(SHARD_ENV):
        shard = _parse_shard(env[SHARD_ENV], f"shard (from {SHARD_ENV})")
    else:
        shard = _parse_shard(raw.get("shard"))
    log = sections["log"]
    if log.level != log.level.lower():
        sections["log"] = dataclasses.replace(log, level=log.level.lower())
    settings = Settings(
        accounts=_parse_accounts(raw.get("accounts")),
        listen=listen,
        web_config_file=str(web_config_file),
        shard=shard,
        **sections,
    )
    _validate(settings)
    return settings


def load_config(path: str | Path, env: Mapping[str, str] | None = None) -> Settings:
    """Read a YAML config file, expand ``${VAR}`` in its values and validate it."""
    env = os.environ if env is None else env
    where = f"config file {str(path)!r}"
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{where}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{where}: not UTF-8 text (byte {exc.start})") from None
    # ${VAR} becomes a plain word for the parser and is restored in the parsed strings, so a
    # reference works anywhere (also in {flow: ${X}} mappings) and an expanded value can never
    # change the document's structure.
    nonce = secrets.token_hex(4)
    refs: list[str] = []

    def protect(m: re.Match[str]) -> str:
        refs.append(m.group(0))
        return f"cdnvideo{nonce}ref{len(refs) - 1}x"

    try:
        raw = yaml.safe_load(_VAR.sub(protect, text))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise ConfigError(f"{where}: {problem}{at}") from None
    except (ValueError, RecursionError) as exc:  # e.g. a date such as 2026-13-01
        raise ConfigError(f"{where}: invalid YAML value ({exc})") from None
    placeholder = re.compile(f"cdnvideo{nonce}ref([0-9]+)x")
    try:
        raw = _restore(raw, placeholder, refs)
    except RecursionError:  # an alias inside itself (a: &a [*a]), or absurd nesting
        raise ConfigError(f"{where}: a value contains itself or nests too deeply") from None
    return parse_config(raw, env)


def _restore(node: Any, placeholder: re.Pattern[str], refs: list[str]) -> Any:
    if isinstance(node, str):
        return placeholder.sub(lambda m: refs[int(m.group(1))], node)
    if isinstance(node, dict):
        return {
            _restore(k, placeholder, refs): _restore(v, placeholder, refs) for k, v in node.items()
        }
    if isinstance(node, list):
        return [_restore(v, placeholder, refs) for v in node]
    return node
