"""Load the YAML config into frozen, typed settings; refuse bad values with a pointed message."""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
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


def _doc(text: str, secret: bool = False) -> dict[str, Any]:
    return {"doc": text, "secret": secret}


@dataclass(frozen=True)
class UpstreamSettings:
    base_url: str = field(
        default="https://api.cdnvideo.ru",
        metadata=_doc("Platform API base URL (white-label hosts work the same)."),
    )
    token: str = field(
        default="", metadata=_doc("Static CDN-AUTH-TOKEN (env CDNVIDEO_TOKEN).", secret=True)
    )
    username: str = field(
        default="", metadata=_doc("Portal login; a token is fetched and renewed before expiry.")
    )
    password: str = field(
        default="", metadata=_doc("Portal password (env CDNVIDEO_PASSWORD).", secret=True)
    )
    timeout_seconds: float = field(default=10.0, metadata=_doc("Timeout of one upstream request."))
    max_concurrency: int = field(default=8, metadata=_doc("Upstream requests in flight at most."))


@dataclass(frozen=True)
class AccountSettings:
    name: str = field(default="", metadata=_doc("Account name used in the API paths."))
    dvr_streams: tuple[str, ...] = field(
        default=(), metadata=_doc("DVR stream names to watch (may contain '/').")
    )


@dataclass(frozen=True)
class TrafficSettings:
    enabled: bool = field(default=True, metadata=_doc("Poll /app/metrics/v1/."))
    delay_seconds: int = field(
        default=120, metadata=_doc("Read a minute this long after it closes.")
    )
    revisit_minutes: int = field(
        default=5,
        metadata=_doc("Re-read recent minutes this long after the first read; add only increases."),
    )
    catch_up_minutes: int = field(
        default=60, metadata=_doc("Longest gap backfilled after an outage or restart.")
    )
    per_resource: bool = field(default=True, metadata=_doc("Also export per-resource series."))
    resources_include: str = field(
        default=".*", metadata=_doc("Regex a resource id or name must match to be exported.")
    )
    resources_exclude: str = field(
        default="", metadata=_doc("Regex that drops matching resources (empty = none).")
    )
    max_resources: int = field(
        default=0,
        metadata=_doc('0 = no cap; N = top N by edge traffic, the rest as resource="__other__".'),
    )
    state_file: str = field(
        default="", metadata=_doc("File where the accounted-minute cursor survives restarts.")
    )


@dataclass(frozen=True)
class RestreamSettings:
    enabled: bool = field(default=True, metadata=_doc("Poll restream resources and status."))
    interval_seconds: float = field(default=30.0, metadata=_doc("Resources + status poll period."))
    history_interval_seconds: float = field(
        default=300.0, metadata=_doc("Status-history poll period.")
    )


@dataclass(frozen=True)
class DvrSettings:
    enabled: bool = field(default=True, metadata=_doc("Poll the configured DVR streams."))
    interval_seconds: float = field(default=60.0, metadata=_doc("DVR poll period."))


@dataclass(frozen=True)
class TalkingHeadSettings:
    enabled: bool = field(default=True, metadata=_doc("Poll talking-head configurations/quota."))
    interval_seconds: float = field(
        default=21600.0,
        metadata=_doc("Quota poll period; the platform allows 1500 requests a month."),
    )


@dataclass(frozen=True)
class AdminSettings:
    enabled: bool = field(default=False, metadata=_doc("Serve the /api/v1 admin surface."))
    read_token: str = field(
        default="",
        metadata=_doc("Bearer token for reads (env CDNVIDEO_ADMIN_READ_TOKEN).", secret=True),
    )
    write_token: str = field(
        default="",
        metadata=_doc("Bearer token for changes (env CDNVIDEO_ADMIN_WRITE_TOKEN).", secret=True),
    )


@dataclass(frozen=True)
class LogSettings:
    level: str = field(default="info", metadata=_doc("debug, info, warning or error."))
    format: str = field(
        default="auto",
        metadata=_doc("auto (console on a terminal, JSON otherwise), console, json."),
    )


@dataclass(frozen=True)
class Shard:
    index: int = 0
    count: int = 1

    def owns(self, account: str) -> bool:
        """Whether this replica serves the account (stable hash modulo the shard count)."""
        return stable_hash(account) % self.count == self.index

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


@dataclass(frozen=True)
class Settings:
    upstream: UpstreamSettings = field(default_factory=UpstreamSettings)
    accounts: tuple[AccountSettings, ...] | None = None
    traffic: TrafficSettings = field(default_factory=TrafficSettings)
    restream: RestreamSettings = field(default_factory=RestreamSettings)
    dvr: DvrSettings = field(default_factory=DvrSettings)
    talking_head: TalkingHeadSettings = field(default_factory=TalkingHeadSettings)
    listen: str = "0.0.0.0:9877"
    shard: Shard = field(default_factory=Shard)
    admin: AdminSettings = field(default_factory=AdminSettings)
    log: LogSettings = field(default_factory=LogSettings)

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


def split_host_port(value: str, key: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(f"{key}: expected HOST:PORT with a port 1-65535, got {value!r}")
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
        return float(value)
    if typ is str:
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise ConfigError(f"{key}: expected a string, got {value!r}")
        return str(value)
    if typ == tuple[str, ...]:
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
        if value is None:
            continue
        values[key] = _coerce(value, hints[key], f"{prefix}.{key}")
    return cls(**values)


def _parse_shard(raw: Any) -> Shard:
    text = str(raw)
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if not m:
        raise ConfigError(f"shard: expected INDEX/COUNT such as 0/1, got {text!r}")
    index, count = int(m.group(1)), int(m.group(2))
    if count < 1 or index >= count:
        raise ConfigError(
            f"shard: index must be below the count (0 <= index < count), got {text!r}"
        )
    return Shard(index, count)


def _parse_accounts(raw: Any) -> tuple[AccountSettings, ...] | None:
    if raw is None:
        return None
    if not isinstance(raw, list):
        raise ConfigError(f"accounts: expected a list of accounts, got {raw!r}")
    accounts = []
    seen: set[str] = set()
    for i, item in enumerate(raw):
        if isinstance(item, str):
            item = {"name": item}
        acc = _section(AccountSettings, item, f"accounts[{i}]")
        if not acc.name:
            raise ConfigError(f"accounts[{i}].name: required, the account name of the API paths")
        if "/" in acc.name or acc.name.strip() != acc.name:
            raise ConfigError(f"accounts[{i}].name: {acc.name!r} is not a valid account name")
        if acc.name in seen:
            raise ConfigError(f"accounts[{i}].name: {acc.name!r} is listed twice")
        seen.add(acc.name)
        accounts.append(acc)
    return tuple(accounts)


def _validate(s: Settings) -> None:
    up = s.upstream
    parts = urlsplit(up.base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            f"upstream.base_url: expected an http(s) URL such as https://api.cdnvideo.ru, "
            f"got {up.base_url!r}"
        )
    if parts.username or parts.password:
        raise ConfigError("upstream.base_url: must not carry credentials; use token or password")
    if up.token and (up.username or up.password):
        raise ConfigError("upstream: give either token or username + password, not both")
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
        except re.error as exc:
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
    """Turn a parsed YAML document into validated settings."""
    env = os.environ if env is None else env
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError("config: expected a mapping at the top level")
    raw = dict(raw)
    for key in raw:
        if key not in TOP_LEVEL_KEYS:
            raise ConfigError(f"{key}: unknown key{_hint(str(key), TOP_LEVEL_KEYS)}")
    for var, (section, key) in ENV_OVERRIDES.items():
        if env.get(var):
            sec = raw.get(section)
            sec = dict(sec) if isinstance(sec, dict) else {}
            sec[key] = env[var]
            raw[section] = sec
    sections = {name: _section(cls, raw.get(name), name) for name, cls in SECTIONS.items()}
    listen = raw.get("listen", "0.0.0.0:9877")
    if not isinstance(listen, str):
        raise ConfigError(f"listen: expected HOST:PORT, got {listen!r}")
    settings = Settings(
        accounts=_parse_accounts(raw.get("accounts")),
        listen=listen,
        shard=_parse_shard(raw.get("shard", "0/1")),
        **sections,
    )
    _validate(settings)
    return settings


def load_config(path: str | Path, env: Mapping[str, str] | None = None) -> Settings:
    """Read, expand ``${VAR}`` and validate a YAML config file."""
    env = os.environ if env is None else env
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"config file {str(path)!r}: {exc.strerror or exc}") from None
    try:
        raw = yaml.safe_load(expand_env(text, env))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise ConfigError(f"config file {str(path)!r}: {problem}{where}") from None
    return parse_config(raw, env)


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
