"""The exporter-toolkit web configuration file (TLS, basic auth, headers), read and checked.

The format is the one node_exporter and every exporter built on prometheus/exporter-toolkit
reads with ``--web.config.file``, so an operator's existing file works unchanged:

    tls_server_config:
      cert_file: server.crt           # relative paths are relative to this file
      key_file: server.key
      client_auth_type: RequireAndVerifyClientCert
      client_ca_file: ca.crt
      min_version: TLS12
    http_server_config:
      headers: {Strict-Transport-Security: max-age=31536000}
    basic_auth_users:
      prometheus: $2y$10$...          # bcrypt hash (htpasswd -nBC 10 "" | tr -d ':\\n')

Every key of the toolkit's format is accepted; the few this server cannot honour
(``curve_preferences``, client certificates taken unverified; ``http2``: aiohttp speaks
HTTP/1.1) are checked as the toolkit checks them and reported as warnings. A key the
toolkit does not know, a bad value, or a certificate or key that does not load is a
``ConfigError`` naming the key, so the daemon does not start.
"""

from __future__ import annotations

import re
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from exporter.config import ConfigError
from exporter.web.tlsconfig import TLS_KEYS, tls_context
from exporter.web.yamlvalues import hint, mapping, scalar, strings

TOP_KEYS = ("tls_server_config", "http_server_config", "basic_auth_users", "rate_limit")
HTTP_KEYS = ("http2", "headers")
RATE_KEYS = ("interval", "burst")
# The toolkit's headers an operator may set, with the values allowed (None: any).
HEADERS: dict[str, tuple[str, ...] | None] = {
    "Strict-Transport-Security": None,
    "X-Content-Type-Options": ("nosniff",),
    "X-Frame-Options": ("deny", "sameorigin"),
    "X-XSS-Protection": None,
    "Content-Security-Policy": None,
}
BCRYPT_HASH = re.compile(r"\$2[abxy]?\$(0[4-9]|[12][0-9]|3[01])\$[./A-Za-z0-9]{53}")
# The highest bcrypt cost taken: each step doubles a check (bcrypt in
# docs/performance.md#figures-behind-the-code), and a scrape, or an unknown user's dummy check,
# should not cost seconds of a core.
MAX_BCRYPT_COST = 14


@dataclass(frozen=True)
class WebConfig:
    """What the listener applies: TLS (None: plain HTTP), basic-auth users, extra headers."""

    path: str
    tls: ssl.SSLContext | None
    users: Mapping[str, bytes]
    headers: Mapping[str, str]
    allowed_sans: tuple[str, ...] | None
    warnings: tuple[str, ...]
    rate_limit: tuple[float, int] | None = None  # (seconds between requests, burst)
    files: tuple[str, ...] = ()  # the file itself and every file it names (for reloads)
    empty: bool = False  # the file held no YAML document at all


def _users(raw: Any) -> dict[str, bytes]:
    users = mapping(raw, "basic_auth_users", None)
    out: dict[str, bytes] = {}
    for user, hashed in users.items():
        found = BCRYPT_HASH.fullmatch(hashed) if isinstance(hashed, str) else None
        if found is None:
            # the value is a secret: never quoted back
            raise ConfigError(
                f"basic_auth_users.{user}: not a bcrypt hash (expected $2y$10$... as "
                "htpasswd -nBC 10 makes)"
            )
        cost = int(found.group(1))
        if cost > MAX_BCRYPT_COST:
            raise ConfigError(
                f"basic_auth_users.{user}: bcrypt cost {cost} is above {MAX_BCRYPT_COST} "
                f"(every check of a password would take {2 ** (cost - 10)}x a cost-10 check); "
                "make the hash again with htpasswd -nBC 10"
            )
        out[user] = hashed.encode()
    return out


def _headers(raw: Any) -> dict[str, str]:
    headers = mapping(raw, "http_server_config.headers", None)
    out: dict[str, str] = {}
    for name, raw_value in headers.items():
        where = f"http_server_config.headers.{name}"
        value = "" if raw_value is None else scalar(raw_value, where)
        if name not in HEADERS:
            known = hint(name, tuple(HEADERS))
            raise ConfigError(f"{where}: this header can not be configured{known}")
        allowed = HEADERS[name]
        if value and allowed is not None and value not in allowed:
            raise ConfigError(f"{where}: expected one of {list(allowed)}, got {value!r}")
        if value:  # blank: unset, as in the toolkit
            out[name] = value
    return out


DURATION_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_DURATION_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ns|us|µs|ms|s|m|h)")


def go_duration(value: Any, where: str) -> float:
    """Seconds of a Go duration (``1s``, ``1m30s``, ``250ms``; a bare 0 is zero)."""
    text = str(value)
    if text == "0":
        return 0.0
    if isinstance(value, bool) or not re.fullmatch(f"(?:{_DURATION_PART.pattern})+", text):
        raise ConfigError(f"{where}: expected a duration such as 1s or 250ms, got {text!r}")
    return sum(float(n) * DURATION_UNITS[u] for n, u in _DURATION_PART.findall(text))


def _rate_limit(raw: Any) -> tuple[float, int] | None:
    """(interval, burst) as the toolkit's token bucket takes them; None when off (interval 0)."""
    limit = mapping(raw, "rate_limit", RATE_KEYS)
    interval = go_duration(limit.get("interval", 0), "rate_limit.interval")
    burst = limit.get("burst", 0)
    if isinstance(burst, bool) or not isinstance(burst, int) or burst < 0:
        raise ConfigError(f"rate_limit.burst: expected a whole number >= 0, got {burst!r}")
    return (interval, burst) if interval > 0 else None


def parse_web_config(raw: Any, base: Path, path: str = "") -> WebConfig:
    """Check a parsed web config document; file paths in it are relative to ``base``."""
    top = mapping(raw, "web config", TOP_KEYS)
    warn: list[str] = []
    tls_raw = mapping(top.get("tls_server_config"), "tls_server_config", TLS_KEYS)
    http_raw = mapping(top.get("http_server_config"), "http_server_config", HTTP_KEYS)
    http2 = http_raw.get("http2", True)
    if not isinstance(http2, bool):
        raise ConfigError("http_server_config.http2: expected true or false")
    headers = _headers(http_raw.get("headers"))
    users = _users(top.get("basic_auth_users"))
    rate_limit = _rate_limit(top.get("rate_limit"))
    files = [path] if path else []
    tls = tls_context(tls_raw, base, warn, files)
    sans = strings(tls_raw, "client_allowed_sans", "tls_server_config")
    if sans is not None and (tls is None or tls.verify_mode == ssl.CERT_NONE):
        raise ConfigError(
            "tls_server_config.client_allowed_sans: needs a client_auth_type that verifies "
            "client certificates"
        )
    return WebConfig(path, tls, users, headers, sans, tuple(warn), rate_limit, tuple(files))


def load_web_config(path: str) -> WebConfig:
    """Read and check a web config file; a ``ConfigError`` names the file and the problem."""
    where = f"web config file {path!r}"
    try:
        text = Path(path).read_text(encoding="utf-8")
        raw = yaml.safe_load(text)
    except OSError as exc:
        raise ConfigError(f"{where}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{where}: not UTF-8 text (byte {exc.start})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise ConfigError(f"{where}: {problem}{at}") from None
    try:
        config = parse_web_config(raw, Path(path).resolve().parent, path)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    # An empty file is a config without TLS or users, as the toolkit reads it at start-up; a
    # reload refuses it (webreload: fail closed).
    return replace(config, empty=raw is None)
