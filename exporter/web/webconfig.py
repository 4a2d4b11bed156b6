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

Every key of the toolkit's format is accepted; the few this server cannot honour (listed in
``UNSUPPORTED``; ``http2``: aiohttp speaks HTTP/1.1) are checked as the toolkit checks them
and reported as warnings. A key the
toolkit does not know, a bad value, or a certificate or key that does not load is a
``ConfigError`` naming the key, so the daemon does not start.
"""

from __future__ import annotations

import difflib
import os
import re
import ssl
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from exporter.config import ConfigError

TOP_KEYS = ("tls_server_config", "http_server_config", "basic_auth_users", "rate_limit")
TLS_KEYS = (
    "cert",
    "key",
    "client_ca",
    "cert_file",
    "key_file",
    "client_auth_type",
    "client_ca_file",
    "client_allowed_sans",
    "min_version",
    "max_version",
    "cipher_suites",
    "prefer_server_cipher_suites",
    "curve_preferences",
)
HTTP_KEYS = ("http2", "headers")
RATE_KEYS = ("interval", "burst")
# Keys of the format this server reads but cannot apply, and what happens instead.
UNSUPPORTED = {
    "tls_server_config.curve_preferences": "OpenSSL's default curves are offered",
    "tls_server_config.client_auth_type": "no client certificate is asked for: one taken "
    "without verification (any self-signed one passes) admits the same clients",
}

TLS_VERSIONS = {
    "TLS10": ssl.TLSVersion.TLSv1,
    "TLS11": ssl.TLSVersion.TLSv1_1,
    "TLS12": ssl.TLSVersion.TLSv1_2,
    "TLS13": ssl.TLSVersion.TLSv1_3,
}
CLIENT_AUTH = {
    "": ssl.CERT_NONE,
    "NoClientCert": ssl.CERT_NONE,
    # Go asks for a certificate and ignores it; not asking has the same effect.
    "RequestClientCert": ssl.CERT_NONE,
    # Go takes any certificate unverified here; OpenSSL verifies every one it takes.
    "RequireAnyClientCert": ssl.CERT_NONE,
    "RequireClientCert": ssl.CERT_NONE,
    "VerifyClientCertIfGiven": ssl.CERT_OPTIONAL,
    "RequireAndVerifyClientCert": ssl.CERT_REQUIRED,
}
UNVERIFIED_CLIENT_AUTH = ("RequestClientCert", "RequireAnyClientCert", "RequireClientCert")
CURVES = ("CurveP256", "CurveP384", "CurveP521", "X25519")
# Go's names (crypto/tls.CipherSuites) of the TLS 1.2 suites -> OpenSSL's names. TLS 1.3
# suites are not configurable in Go either; they are accepted and change nothing.
CIPHERS = {
    "TLS_RSA_WITH_AES_128_CBC_SHA": "AES128-SHA",
    "TLS_RSA_WITH_AES_256_CBC_SHA": "AES256-SHA",
    "TLS_RSA_WITH_AES_128_GCM_SHA256": "AES128-GCM-SHA256",
    "TLS_RSA_WITH_AES_256_GCM_SHA384": "AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA": "ECDHE-ECDSA-AES128-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA": "ECDHE-ECDSA-AES256-SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA": "ECDHE-RSA-AES128-SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA": "ECDHE-RSA-AES256-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
}
TLS13_CIPHERS = ("TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256")
# The toolkit's headers an operator may set, with the values allowed (None: any).
HEADERS: dict[str, tuple[str, ...] | None] = {
    "Strict-Transport-Security": None,
    "X-Content-Type-Options": ("nosniff",),
    "X-Frame-Options": ("deny", "sameorigin"),
    "X-XSS-Protection": None,
    "Content-Security-Policy": None,
}
BCRYPT_HASH = re.compile(r"\$2[abxy]?\$(0[4-9]|[12][0-9]|3[01])\$[./A-Za-z0-9]{53}")


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


def _hint(key: str, known: tuple[str, ...]) -> str:
    close = difflib.get_close_matches(key, list(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _mapping(raw: Any, where: str, known: tuple[str, ...] | None) -> dict[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: expected a mapping, got a {type(raw).__name__}")
    for key in raw:
        if not isinstance(key, str):
            raise ConfigError(f"{where}: keys must be strings, got {key!r}")
        if known is not None and key not in known:
            raise ConfigError(f"{where}.{key}: unknown key{_hint(key, known)}")
    return raw


def _scalar(value: Any, where: str) -> str:
    """A YAML scalar as Go's YAML reads it into a string (``1`` -> "1", ``true`` -> "true")."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if not isinstance(value, str | int | float):
        raise ConfigError(f"{where}: expected a string, got a {type(value).__name__}")
    return str(value)


def _string(raw: Mapping[str, Any], key: str, where: str) -> str:
    value = raw.get(key)
    return "" if value is None else _scalar(value, f"{where}.{key}")


def _strings(raw: Mapping[str, Any], key: str, where: str) -> tuple[str, ...] | None:
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}.{key}: expected a list of strings")
    return tuple(value)


def _file(base: Path, value: str, where: str) -> str:
    path = base / value  # an absolute value replaces the base
    try:
        path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{where}: cannot read {str(path)!r} ({exc.strerror or exc})") from None
    return str(path)


def _pem(text: str, kind: str, where: str) -> None:
    if f"-----BEGIN {kind}" not in text and not (
        kind == "PRIVATE KEY" and re.search(r"-----BEGIN [A-Z ]*PRIVATE KEY-----", text)
    ):
        raise ConfigError(f"{where}: no PEM {kind.lower()} in it")


def _no_passphrase() -> bytes:
    return b""  # never let OpenSSL prompt on a terminal for an encrypted key


def _load_pair(ctx: ssl.SSLContext, cert: str, key: str, where: str) -> None:
    """Load the server certificate and key (files); a pointed error when they do not load."""
    _pem(Path(cert).read_text(errors="replace"), "CERTIFICATE", f"{where}.cert_file")
    key_text = Path(key).read_text(errors="replace")
    _pem(key_text, "PRIVATE KEY", f"{where}.key_file")
    if "ENCRYPTED" in key_text:
        raise ConfigError(
            f"{where}.key_file: the key is encrypted; the format has no passphrase, "
            "give an unencrypted key (readable by the exporter only)"
        )
    try:
        ctx.load_cert_chain(cert, key, password=_no_passphrase)
    except ssl.SSLError as exc:
        reason = str(exc.reason or exc)
        if "KEY_VALUES_MISMATCH" in reason:
            raise ConfigError(
                f"{where}: key_file {key!r} is not the key of cert_file {cert!r}"
            ) from None
        raise ConfigError(
            f"{where}: cannot load cert_file {cert!r} with key_file {key!r} ({reason})"
        ) from None


def _load_inline_pair(ctx: ssl.SSLContext, cert: str, key: str, where: str) -> None:
    """Inline ``cert`` / ``key``: OpenSSL loads files, so they pass through a private temp dir."""
    with tempfile.TemporaryDirectory(prefix="cdnvideo-tls-") as tmp:
        paths = []
        for name, text in (("cert", cert), ("key", key)):
            path = Path(tmp) / name
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(text)
            paths.append(str(path))
        _load_pair(ctx, paths[0], paths[1], where)


def _version(raw: Mapping[str, Any], key: str, default: str, where: str) -> ssl.TLSVersion:
    name = _string(raw, key, where) or default
    if name not in TLS_VERSIONS:
        raise ConfigError(
            f"{where}.{key}: unknown TLS version {name!r}; "
            f"expected one of {', '.join(TLS_VERSIONS)}"
        )
    return TLS_VERSIONS[name]


def _tls_context(raw: Mapping[str, Any], base: Path, warn: list[str]) -> ssl.SSLContext | None:
    where = "tls_server_config"
    if not any(raw.get(k) for k in ("cert", "key", "cert_file", "key_file", "client_ca",
                                    "client_ca_file", "client_auth_type")):  # fmt: skip
        return None  # as the toolkit: no TLS settings at all means plain HTTP
    cert, cert_file = _string(raw, "cert", where), _string(raw, "cert_file", where)
    key, key_file = _string(raw, "key", where), _string(raw, "key_file", where)
    if not cert and not cert_file:
        raise ConfigError(f"{where}: missing one of cert or cert_file")
    if not key and not key_file:
        raise ConfigError(f"{where}: missing one of key or key_file")
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = _version(raw, "min_version", "TLS12", where)
    ctx.maximum_version = _version(raw, "max_version", "TLS13", where)
    if ctx.minimum_version > ctx.maximum_version:
        raise ConfigError(f"{where}: min_version is above max_version")
    if cert_file and key_file:
        _load_pair(
            ctx,
            _file(base, cert_file, f"{where}.cert_file"),
            _file(base, key_file, f"{where}.key_file"),
            where,
        )
    else:
        if cert_file:
            cert = Path(_file(base, cert_file, f"{where}.cert_file")).read_text(errors="replace")
        if key_file:
            key = Path(_file(base, key_file, f"{where}.key_file")).read_text(errors="replace")
        _load_inline_pair(ctx, cert, key, where)
    _ciphers(ctx, raw, where)
    prefer = raw.get("prefer_server_cipher_suites", True)
    if not isinstance(prefer, bool):
        raise ConfigError(f"{where}.prefer_server_cipher_suites: expected true or false")
    if prefer:
        ctx.options |= ssl.OP_CIPHER_SERVER_PREFERENCE
    else:
        ctx.options &= ~ssl.OP_CIPHER_SERVER_PREFERENCE
    curves = _strings(raw, "curve_preferences", where)
    for curve in curves or ():
        if curve not in CURVES:
            raise ConfigError(f"{where}.curve_preferences: unknown curve {curve!r}")
    if curves:
        warn.append(f"{where}.curve_preferences: {UNSUPPORTED[f'{where}.curve_preferences']}")
    _client_auth(ctx, raw, base, where, warn)
    return ctx


def _ciphers(ctx: ssl.SSLContext, raw: Mapping[str, Any], where: str) -> None:
    names = _strings(raw, "cipher_suites", where)
    if not names:
        return
    openssl = []
    for name in names:
        if name in CIPHERS:
            openssl.append(CIPHERS[name])
        elif name not in TLS13_CIPHERS:
            raise ConfigError(f"{where}.cipher_suites: unknown cipher {name!r}")
    if openssl:
        try:
            ctx.set_ciphers(":".join(openssl))
        except ssl.SSLError:
            raise ConfigError(
                f"{where}.cipher_suites: none of {list(names)} is available in this OpenSSL"
            ) from None


def _client_auth(
    ctx: ssl.SSLContext, raw: Mapping[str, Any], base: Path, where: str, warn: list[str]
) -> None:
    policy = _string(raw, "client_auth_type", where)
    ca_file, ca_text = _string(raw, "client_ca_file", where), _string(raw, "client_ca", where)
    if policy not in CLIENT_AUTH:
        raise ConfigError(
            f"{where}.client_auth_type: invalid {policy!r}; expected one of "
            f"{', '.join(k for k in CLIENT_AUTH if k)}"
        )
    if policy in UNVERIFIED_CLIENT_AUTH:
        key = f"{where}.client_auth_type"
        warn.append(f"{key}: {policy}: {UNSUPPORTED[key]}")
    if (ca_file or ca_text) and policy in ("", "NoClientCert"):
        raise ConfigError(
            f"{where}: client CA's have been configured without a client_auth_type policy"
        )
    ctx.verify_mode = CLIENT_AUTH[policy]
    if ctx.verify_mode == ssl.CERT_NONE:
        return
    try:
        if ca_file:
            ca_path = _file(base, ca_file, f"{where}.client_ca_file")
            ca_pem = Path(ca_path).read_text(errors="replace")
            _pem(ca_pem, "CERTIFICATE", f"{where}.client_ca_file")
            ctx.load_verify_locations(cafile=ca_path)
        elif ca_text:
            _pem(ca_text, "CERTIFICATE", f"{where}.client_ca")
            ctx.load_verify_locations(cadata=ca_text)
        else:
            ctx.load_default_certs(ssl.Purpose.CLIENT_AUTH)
    except ssl.SSLError as exc:
        raise ConfigError(f"{where}: cannot load the client CA ({exc.reason or exc})") from None


def _users(raw: Any) -> dict[str, bytes]:
    users = _mapping(raw, "basic_auth_users", None)
    out: dict[str, bytes] = {}
    for user, hashed in users.items():
        if not isinstance(hashed, str) or not BCRYPT_HASH.fullmatch(hashed):
            # the value is a secret: never quoted back
            raise ConfigError(
                f"basic_auth_users.{user}: not a bcrypt hash (expected $2y$10$... as "
                "htpasswd -nBC 10 makes)"
            )
        out[user] = hashed.encode()
    return out


def _headers(raw: Any) -> dict[str, str]:
    headers = _mapping(raw, "http_server_config.headers", None)
    out: dict[str, str] = {}
    for name, raw_value in headers.items():
        where = f"http_server_config.headers.{name}"
        value = "" if raw_value is None else _scalar(raw_value, where)
        if name not in HEADERS:
            known = _hint(name, tuple(HEADERS))
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
    limit = _mapping(raw, "rate_limit", RATE_KEYS)
    interval = go_duration(limit.get("interval", 0), "rate_limit.interval")
    burst = limit.get("burst", 0)
    if isinstance(burst, bool) or not isinstance(burst, int) or burst < 0:
        raise ConfigError(f"rate_limit.burst: expected a whole number >= 0, got {burst!r}")
    return (interval, burst) if interval > 0 else None


def parse_web_config(raw: Any, base: Path, path: str = "") -> WebConfig:
    """Check a parsed web config document; file paths in it are relative to ``base``."""
    top = _mapping(raw, "web config", TOP_KEYS)
    warn: list[str] = []
    tls_raw = _mapping(top.get("tls_server_config"), "tls_server_config", TLS_KEYS)
    http_raw = _mapping(top.get("http_server_config"), "http_server_config", HTTP_KEYS)
    http2 = http_raw.get("http2", True)
    if not isinstance(http2, bool):
        raise ConfigError("http_server_config.http2: expected true or false")
    headers = _headers(http_raw.get("headers"))
    users = _users(top.get("basic_auth_users"))
    rate_limit = _rate_limit(top.get("rate_limit"))
    tls = _tls_context(tls_raw, base, warn)
    sans = _strings(tls_raw, "client_allowed_sans", "tls_server_config")
    if sans is not None and (tls is None or tls.verify_mode == ssl.CERT_NONE):
        raise ConfigError(
            "tls_server_config.client_allowed_sans: needs a client_auth_type that verifies "
            "client certificates"
        )
    return WebConfig(path, tls, users, headers, sans, tuple(warn), rate_limit)


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
        return parse_web_config(raw, Path(path).resolve().parent, path)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
