"""Load the YAML config into frozen, typed settings; refuse bad values with a pointed message."""

from __future__ import annotations

import dataclasses
import difflib
import math
import os
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_type_hints
from urllib.parse import urlsplit

import yaml

SECRET_MASK = "********"
TALKING_HEAD_MONTHLY_ALLOWANCE = 1500
SECONDS_PER_MONTH = 30 * 86400


class ConfigError(ValueError):
    """A config value is invalid; the message names the key and what is wrong."""


def _doc(text: str, secret: bool = False, rule: str = "") -> dict[str, Any]:
    """Field metadata: what the key means, whether it is a secret, what values are accepted.

    docs/configuration.md is generated from it (``python -m exporter.docgen``).
    """
    return {"doc": text, "secret": secret, "rule": rule}


@dataclass(frozen=True)
class UpstreamSettings:
    base_url: str = field(
        default="https://api.cdnvideo.ru",
        metadata=_doc(
            "Platform API base URL. White-label copies of the platform work the same: set "
            "their API host here. Env `CDNVIDEO_BASE_URL`.",
            rule="http(s) URL; no credentials, query or fragment; a path prefix is kept",
        ),
    )
    token: str = field(
        default="",
        metadata=_doc(
            "Static `CDN-AUTH-TOKEN`, sent as is and never renewed. Env `CDNVIDEO_TOKEN`.",
            secret=True,
            rule="either `token` or `username` + `password`",
        ),
    )
    username: str = field(
        default="",
        metadata=_doc(
            "Portal login. A token is fetched from `/app/oauth/v1/token/`, renewed after 80% "
            "of its lifetime and once on a 403 that says it expired; a rejected password is "
            "never tried again until restart. Env `CDNVIDEO_USERNAME`.",
            rule="with `password`, instead of `token`",
        ),
    )
    password: str = field(
        default="",
        metadata=_doc(
            "Portal password. Env `CDNVIDEO_PASSWORD`.",
            secret=True,
            rule="with `username`, instead of `token`",
        ),
    )
    timeout_seconds: float = field(
        default=10.0,
        metadata=_doc("Timeout of one upstream request, start to end of body.", rule="> 0"),
    )
    max_concurrency: int = field(
        default=8,
        metadata=_doc("Upstream requests in flight at most, over all areas.", rule="> 0"),
    )


@dataclass(frozen=True)
class AccountSettings:
    name: str = field(
        default="",
        metadata=_doc(
            "Account name as used in the API paths.",
            rule="required; unique; no '/', not '.' or '..', no surrounding spaces",
        ),
    )
    dvr_streams: tuple[str, ...] = field(
        default=(),
        metadata=_doc(
            "DVR streams to watch. A name may contain '/' (`live/main`); a single name may "
            "be given without the list.",
            rule="no empty, '.' or '..' segments; no duplicates",
        ),
    )


@dataclass(frozen=True)
class TrafficSettings:
    enabled: bool = field(
        default=True, metadata=_doc("Poll `/app/metrics/v1/` (and `/resources`).")
    )
    delay_seconds: int = field(
        default=120,
        metadata=_doc(
            "Read a minute this long after it closes; the platform's figures keep rising for "
            "a while.",
            rule=">= 0; below 60 check-config warns",
        ),
    )
    revisit_minutes: int = field(
        default=5,
        metadata=_doc(
            "Re-read recent minutes this long after the first read and add only late "
            "increases, so each counter counts every request exactly once.",
            rule="0-10",
        ),
    )
    catch_up_minutes: int = field(
        default=60,
        metadata=_doc(
            "Longest gap backfilled after an outage or restart; older minutes are counted "
            'as `cdnvideo_traffic_windows_total{outcome="missed"}`.',
            rule=">= 0",
        ),
    )
    per_resource: bool = field(
        default=True, metadata=_doc("Also export the `cdnvideo_resource_*` series.")
    )
    resources_include: str = field(
        default=".*",
        metadata=_doc(
            "Regular expression a resource id or name must match to be exported.",
            rule="valid Python regular expression",
        ),
    )
    resources_exclude: str = field(
        default="",
        metadata=_doc(
            "Regular expression that drops matching resources (empty: none).",
            rule="valid Python regular expression",
        ),
    )
    max_resources: int = field(
        default=0,
        metadata=_doc(
            "0: no cap. N: the top N resources by edge traffic, the rest summed as "
            '`resource="__other__"`.',
            rule=">= 0",
        ),
    )
    state_file: str = field(
        default="",
        metadata=_doc(
            "File where the accounted-minute cursor survives restarts (empty: kept in "
            "memory only, so a restart re-reads at most `catch_up_minutes`)."
        ),
    )


@dataclass(frozen=True)
class RestreamSettings:
    enabled: bool = field(default=True, metadata=_doc("Poll restream resources and status."))
    interval_seconds: float = field(
        default=30.0, metadata=_doc("Period of the resources + status poll.", rule="> 0")
    )
    history_interval_seconds: float = field(
        default=300.0, metadata=_doc("Period of the status-history poll.", rule="> 0")
    )


@dataclass(frozen=True)
class DvrSettings:
    enabled: bool = field(default=True, metadata=_doc("Poll the `dvr_streams` of every account."))
    interval_seconds: float = field(default=60.0, metadata=_doc("DVR poll period.", rule="> 0"))


@dataclass(frozen=True)
class TalkingHeadSettings:
    enabled: bool = field(
        default=True, metadata=_doc("Poll talking-head configurations (voices, models, quota).")
    )
    interval_seconds: float = field(
        default=21600.0,
        metadata=_doc(
            "Quota poll period. Every poll spends one of the 1500 requests a month the "
            "platform allows per account (see the spend formula below).",
            rule="> 0; below 17280 check-config warns",
        ),
    )


@dataclass(frozen=True)
class AdminSettings:
    enabled: bool = field(default=False, metadata=_doc("Serve the `/api/v1` admin surface."))
    read_token: str = field(
        default="",
        metadata=_doc(
            "Bearer token for reads. Env `CDNVIDEO_ADMIN_READ_TOKEN`.",
            secret=True,
            rule="differs from `write_token`",
        ),
    )
    write_token: str = field(
        default="",
        metadata=_doc(
            "Bearer token for reads and changes. Env `CDNVIDEO_ADMIN_WRITE_TOKEN`.",
            secret=True,
            rule="required when `enabled` is true",
        ),
    )


@dataclass(frozen=True)
class LogSettings:
    level: str = field(
        default="info",
        metadata=_doc("Lowest level written.", rule="debug, info, warning or error"),
    )
    format: str = field(
        default="auto",
        metadata=_doc(
            "`auto`: console on a terminal, JSON otherwise. Secrets are masked in both.",
            rule="auto, console or json",
        ),
    )


@dataclass(frozen=True)
class Shard:
    index: int = 0
    count: int = 1

    def __post_init__(self) -> None:
        if self.count < 1 or not 0 <= self.index < self.count:
            raise ValueError(f"shard {self.index}/{self.count}: need 0 <= index < count")

    def owns(self, account: str) -> bool:
        """Whether this replica serves the account (stable hash modulo the shard count)."""
        return stable_hash(account) % self.count == self.index

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


@dataclass(frozen=True)
class Settings:
    upstream: UpstreamSettings = field(
        default_factory=UpstreamSettings, metadata=_doc("Where the platform is and how to log in.")
    )
    accounts: tuple[AccountSettings, ...] | None = field(
        default=None,
        metadata=_doc(
            "Accounts to export. Leave the key out to discover them from "
            "`/app/inventory/v1/accounts/`; an item may be just the name.",
            rule="a non-empty list",
        ),
    )
    traffic: TrafficSettings = field(
        default_factory=TrafficSettings, metadata=_doc("Traffic metrics, read minute by minute.")
    )
    restream: RestreamSettings = field(
        default_factory=RestreamSettings, metadata=_doc("Restream resources, status, history.")
    )
    dvr: DvrSettings = field(
        default_factory=DvrSettings, metadata=_doc("Network DVR archives of the listed streams.")
    )
    talking_head: TalkingHeadSettings = field(
        default_factory=TalkingHeadSettings, metadata=_doc("Talking-head quota and catalogue.")
    )
    listen: str = field(
        default="0.0.0.0:9877",
        metadata=_doc(
            "Address of `/metrics`, `/healthz`, `/readyz`, the landing page and the admin API.",
            rule="HOST:PORT; [::1]:9877 for IPv6; :9877 for every interface",
        ),
    )
    shard: Shard = field(
        default_factory=Shard,
        metadata=_doc(
            "`INDEX/COUNT`: this replica serves the accounts whose stable hash modulo COUNT "
            "is INDEX (see Sharding). Env `CDNVIDEO_SHARD`.",
            rule="0 <= INDEX < COUNT",
        ),
    )
    admin: AdminSettings = field(
        default_factory=AdminSettings, metadata=_doc("The authenticated `/api/v1` gateway.")
    )
    log: LogSettings = field(default_factory=LogSettings, metadata=_doc("Log output."))

    @property
    def listen_host(self) -> str:
        return split_host_port(self.listen, "listen")[0]

    @property
    def listen_port(self) -> int:
        return split_host_port(self.listen, "listen")[1]

    def secrets(self) -> list[str]:
        """Every secret value in the config, for redaction."""
        values = [
            self.upstream.token,
            self.upstream.password,
            self.admin.read_token,
            self.admin.write_token,
        ]
        return [v for v in values if v]


SECTIONS: dict[str, type[Any]] = {
    "upstream": UpstreamSettings,
    "traffic": TrafficSettings,
    "restream": RestreamSettings,
    "dvr": DvrSettings,
    "talking_head": TalkingHeadSettings,
    "admin": AdminSettings,
    "log": LogSettings,
}
TOP_LEVEL_KEYS = (*SECTIONS, "accounts", "listen", "shard")

# Environment variables that override secrets (and the login) when set and non-empty.
ENV_OVERRIDES: dict[str, tuple[str, str]] = {
    "CDNVIDEO_TOKEN": ("upstream", "token"),
    "CDNVIDEO_USERNAME": ("upstream", "username"),
    "CDNVIDEO_PASSWORD": ("upstream", "password"),
    "CDNVIDEO_BASE_URL": ("upstream", "base_url"),
    "CDNVIDEO_ADMIN_READ_TOKEN": ("admin", "read_token"),
    "CDNVIDEO_ADMIN_WRITE_TOKEN": ("admin", "write_token"),
}
# Overrides the top-level ``shard`` (deploy/k8s/statefulset.yaml derives it from the pod ordinal).
SHARD_ENV = "CDNVIDEO_SHARD"

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def stable_hash(text: str) -> int:
    """A hash that is the same in every process and release (FNV-1a, 32 bit)."""
    h = 0x811C9DC5
    for byte in text.encode():
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h


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


def _hint(key: str, known: tuple[str, ...] | list[str]) -> str:
    close = difflib.get_close_matches(key, list(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _coerce(value: Any, typ: Any, key: str) -> Any:
    if typ is bool:
        if isinstance(value, bool):
            return value
        raise ConfigError(f"{key}: expected true or false, got {value!r}")
    if typ is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{key}: expected a whole number, got {value!r}")
        return value
    if typ is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{key}: expected a number, got {value!r}")
        if not math.isfinite(value):
            raise ConfigError(f"{key}: expected a finite number, got {value!r}")
        return float(value)
    if typ is str:
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise ConfigError(f"{key}: expected a string, got {value!r}")
        return str(value)
    if typ == tuple[str, ...]:
        if isinstance(value, str) and value:  # a single name where a list was meant
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise ConfigError(f"{key}: expected a list of non-empty strings, got {value!r}")
        return tuple(value)
    raise AssertionError(f"unsupported config type {typ!r}")  # pragma: no cover


def _section(cls: type[Any], raw: Any, prefix: str) -> Any:
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{prefix}: expected a mapping, got {raw!r}")
    hints = get_type_hints(cls)
    names = tuple(f.name for f in dataclasses.fields(cls))
    values: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in names:
            raise ConfigError(f"{prefix}.{key}: unknown key{_hint(str(key), names)}")
        if hints[key] is not str:
            value = _typed(value)
        if value is None:
            continue
        values[key] = _coerce(value, hints[key], f"{prefix}.{key}")
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
        raise ConfigError(f"accounts: expected a list of accounts, got {raw!r}")
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
        raise ConfigError(f"upstream.base_url: {expected}, got {up.base_url!r} ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname or not port_ok:
        raise ConfigError(f"upstream.base_url: {expected}, got {up.base_url!r}")
    if any(c.isspace() for c in up.base_url):
        raise ConfigError(f"upstream.base_url: must not contain spaces, got {up.base_url!r}")
    if parts.username or parts.password:
        raise ConfigError("upstream.base_url: must not carry credentials; use token or password")
    if parts.query or parts.fragment:
        raise ConfigError(
            f"upstream.base_url: must not carry a query or fragment, got {up.base_url!r}"
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
    t = s.traffic
    _at_least("traffic.delay_seconds", t.delay_seconds, 0)
    if not 0 <= t.revisit_minutes <= 10:
        raise ConfigError(
            f"traffic.revisit_minutes: must be 0-10 (a re-read fits one 10-minute window), "
            f"got {t.revisit_minutes}"
        )
    _at_least("traffic.catch_up_minutes", t.catch_up_minutes, 0)
    _at_least("traffic.max_resources", t.max_resources, 0)
    for key in ("resources_include", "resources_exclude"):
        try:
            re.compile(getattr(t, key))
        except (re.error, OverflowError, RecursionError) as exc:
            raise ConfigError(f"traffic.{key}: not a valid regular expression ({exc})") from None
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
    if s.log.level not in ("debug", "info", "warning", "error"):
        raise ConfigError(f"log.level: expected debug, info, warning or error, got {s.log.level!r}")
    if s.log.format not in ("auto", "console", "json"):
        raise ConfigError(f"log.format: expected auto, console or json, got {s.log.format!r}")


def _positive(key: str, value: float) -> None:
    if value <= 0:
        raise ConfigError(f"{key}: must be greater than 0, got {value}")


def _at_least(key: str, value: int, low: int) -> None:
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
        raise ConfigError(f"config: expected a mapping at the top level, got {raw!r:.60}")
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
    return parse_config(_restore(raw, placeholder, refs), env)


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


def masked_dict(settings: Settings) -> dict[str, Any]:
    """The effective config as plain data with every secret replaced by the mask."""

    def section(obj: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in dataclasses.fields(obj):
            value = getattr(obj, f.name)
            if f.metadata.get("secret") and value:
                value = SECRET_MASK
            elif isinstance(value, tuple):
                value = list(value)
            out[f.name] = value
        return out

    data: dict[str, Any] = {"upstream": section(settings.upstream)}
    data["accounts"] = (
        None if settings.accounts is None else [section(a) for a in settings.accounts]
    )
    for name in ("traffic", "restream", "dvr", "talking_head"):
        data[name] = section(getattr(settings, name))
    data["listen"] = settings.listen
    data["shard"] = str(settings.shard)
    data["admin"] = section(settings.admin)
    data["log"] = section(settings.log)
    return data


def talking_head_requests_per_month(settings: Settings) -> float:
    """Talking-head requests the quota poll spends per account in a 30-day month."""
    if not settings.talking_head.enabled:
        return 0.0
    return SECONDS_PER_MONTH / settings.talking_head.interval_seconds


def warnings(settings: Settings) -> list[str]:
    """Legal but risky choices that check-config reports."""
    out = []
    spend = talking_head_requests_per_month(settings)
    if spend > TALKING_HEAD_MONTHLY_ALLOWANCE * 0.10:
        out.append(
            f"talking_head.interval_seconds: {settings.talking_head.interval_seconds:g} s spends "
            f"{spend:.0f} of the {TALKING_HEAD_MONTHLY_ALLOWANCE} talking-head requests a month "
            f"per account (more than 10%); 17280 s or more stays under 10%"
        )
    t = settings.traffic
    if t.delay_seconds < 60:
        out.append(
            f"traffic.delay_seconds: {t.delay_seconds} s reads minutes before their figures "
            "settle; 120 s or more is recommended"
        )
    return out
