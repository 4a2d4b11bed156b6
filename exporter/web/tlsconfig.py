"""The ``tls_server_config`` section of an exporter-toolkit web config, as an SSLContext.

Go's names (TLS versions, client-auth policies, cipher suites) map to OpenSSL's; a value Go
refuses is refused here too, naming the key. What OpenSSL cannot do as Go does is a warning.
"""

from __future__ import annotations

import os
import re
import ssl
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from exporter.config import ConfigError
from exporter.web.yamlvalues import string, strings

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
CURVES_UNSUPPORTED = "OpenSSL's default curves are offered"
UNVERIFIED_UNSUPPORTED = (
    "no client certificate is asked for: one taken without verification (any self-signed one "
    "passes) admits the same clients"
)
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
    name = string(raw, key, where) or default
    if name not in TLS_VERSIONS:
        raise ConfigError(
            f"{where}.{key}: unknown TLS version {name!r}; "
            f"expected one of {', '.join(TLS_VERSIONS)}"
        )
    return TLS_VERSIONS[name]


def tls_context(
    raw: Mapping[str, Any], base: Path, warn: list[str], files: list[str]
) -> ssl.SSLContext | None:
    """The server context; files it read are appended to ``files`` (a reload watches them)."""
    where = "tls_server_config"
    if not any(raw.get(k) for k in ("cert", "key", "cert_file", "key_file", "client_ca",
                                    "client_ca_file", "client_auth_type")):  # fmt: skip
        return None  # as the toolkit: no TLS settings at all means plain HTTP
    cert, cert_file = string(raw, "cert", where), string(raw, "cert_file", where)
    key, key_file = string(raw, "key", where), string(raw, "key_file", where)
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
        pair = (
            _file(base, cert_file, f"{where}.cert_file"),
            _file(base, key_file, f"{where}.key_file"),
        )
        files.extend(pair)
        _load_pair(ctx, *pair, where)
    else:
        if cert_file:
            files.append(_file(base, cert_file, f"{where}.cert_file"))
            cert = Path(files[-1]).read_text(errors="replace")
        if key_file:
            files.append(_file(base, key_file, f"{where}.key_file"))
            key = Path(files[-1]).read_text(errors="replace")
        _load_inline_pair(ctx, cert, key, where)
    _ciphers(ctx, raw, where)
    prefer = raw.get("prefer_server_cipher_suites", True)
    if not isinstance(prefer, bool):
        raise ConfigError(f"{where}.prefer_server_cipher_suites: expected true or false")
    if prefer:
        ctx.options |= ssl.OP_CIPHER_SERVER_PREFERENCE
    else:
        ctx.options &= ~ssl.OP_CIPHER_SERVER_PREFERENCE
    curves = strings(raw, "curve_preferences", where)
    for curve in curves or ():
        if curve not in CURVES:
            raise ConfigError(f"{where}.curve_preferences: unknown curve {curve!r}")
    if curves:
        warn.append(f"{where}.curve_preferences: {CURVES_UNSUPPORTED}")
    _client_auth(ctx, raw, base, where, warn, files)
    return ctx


def _ciphers(ctx: ssl.SSLContext, raw: Mapping[str, Any], where: str) -> None:
    names = strings(raw, "cipher_suites", where)
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
    ctx: ssl.SSLContext,
    raw: Mapping[str, Any],
    base: Path,
    where: str,
    warn: list[str],
    files: list[str],
) -> None:
    policy = string(raw, "client_auth_type", where)
    ca_file, ca_text = string(raw, "client_ca_file", where), string(raw, "client_ca", where)
    if policy not in CLIENT_AUTH:
        raise ConfigError(
            f"{where}.client_auth_type: invalid {policy!r}; expected one of "
            f"{', '.join(k for k in CLIENT_AUTH if k)}"
        )
    if policy in UNVERIFIED_CLIENT_AUTH:
        warn.append(f"{where}.client_auth_type: {policy}: {UNVERIFIED_UNSUPPORTED}")
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
            files.append(ca_path)
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
