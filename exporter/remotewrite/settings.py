"""The ``remote_write`` settings section: where each minute's final figures go, and how to
authenticate there (the keys of Prometheus' own ``remote_write`` block)."""

from __future__ import annotations

import ssl
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from exporter.config import AreaSection, ConfigError, Settings, field_doc
from exporter.config import rules as r
from exporter.config.secretfiles import SecretFileError, read_secret
from exporter.traffic.settings import TRAFFIC_SECTION

# Prometheus' out_of_order_time_window of the documented receiver set-up is 6 h; a minute
# older than this is not sent (a request holding one would fail whole: 500 "too old sample").
DEFAULT_MAX_AGE_MINUTES = 330


def check_url(key: str, url: str, _: Any) -> None:
    """An http(s) URL urllib reads, with a host and a port in range, no spaces, no userinfo;
    the messages never show the URL (its query may hold a token)."""
    if not url:
        return
    expected = "expected an http(s) URL such as http://prometheus:9090/api/v1/write"
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:  # "https://[host", a port not a number or out of 0-65535
        raise ConfigError(f"{key}: {expected} ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(f"{key}: {expected}")
    if port == 0:
        raise ConfigError(f"{key}: port 0 is no port to send to")
    if any(c.isspace() for c in url):
        raise ConfigError(f"{key}: must not contain spaces")
    if parts.username or parts.password:
        raise ConfigError(f"{key}: no credentials in the URL; use basic_auth")


def check_auth(key: str, section: RemoteWriteSettings, _: Any) -> None:
    """At most one way to authenticate; a client certificate comes with its key; every file
    named can be read (a secret file as the writer reads it), and the TLS ones load."""
    ways = [
        name
        for name, given in (
            ("bearer_token", section.bearer_token),
            ("bearer_token_file", section.bearer_token_file),
            ("basic_auth", section.basic_auth.username),
        )
        if given
    ]
    if len(ways) > 1:
        raise ConfigError(f"{key}: give at most one of {', '.join(ways)}")
    auth = section.basic_auth
    if auth.password and auth.password_file:
        raise ConfigError(f"{key}.basic_auth: give password or password_file, not both")
    if (auth.password or auth.password_file) and not auth.username:
        raise ConfigError(f"{key}.basic_auth.username: required with a password")
    tls = section.tls_config
    if bool(tls.cert_file) != bool(tls.key_file):
        raise ConfigError(f"{key}.tls_config: cert_file and key_file go together")
    if not section.enabled:
        return
    problems = [
        f"{key}.{name}: {exc}"
        for name, path in (
            ("bearer_token_file", section.bearer_token_file),
            ("basic_auth.password_file", auth.password_file),
        )
        if path
        for exc in _unreadable_secret(path)
    ]
    problems += _tls_problems(key, section)
    if problems:
        raise ConfigError.of(problems)


def _unreadable_secret(path: str) -> list[SecretFileError]:
    try:
        read_secret(path)
    except SecretFileError as exc:
        return [exc]
    return []


def _tls_problems(key: str, section: RemoteWriteSettings) -> list[str]:
    """What keeps ``tls_config`` from making a TLS context, each naming its key."""
    tls = section.tls_config
    if not section.url.startswith("https:"):
        given = [n for n in ("ca_file", "cert_file", "key_file", "server_name") if getattr(tls, n)]
        return [f"{key}.tls_config.{n}: only used with an https url" for n in given]
    problems = [
        f"{key}.tls_config.{name}: cannot read {path!r}: {exc.strerror or exc}"
        for name, path in (
            ("ca_file", tls.ca_file),
            ("cert_file", tls.cert_file),
            ("key_file", tls.key_file),
        )
        if path
        for exc in _unopenable(path)
    ]
    if problems:
        return problems
    try:
        ssl_context(section)
    except ConfigError as exc:
        return [f"{key}.{problem}" for problem in exc.problems]
    return []


def _unopenable(path: str) -> list[OSError]:
    try:
        with open(path, "rb"):
            return []
    except OSError as exc:
        return [exc]


def ssl_context(s: RemoteWriteSettings) -> ssl.SSLContext | None:
    """The TLS context towards an https receiver (None for http); ConfigError naming the key
    (``tls_config.ca_file``) when a file holds no usable certificate or key."""
    tls = s.tls_config
    if not s.url.startswith("https:"):
        return None
    try:
        ctx = ssl.create_default_context(cafile=tls.ca_file or None)
    except (ssl.SSLError, OSError) as exc:
        raise ConfigError(f"tls_config.ca_file: no usable CA certificate ({_why(exc)})") from None
    if tls.insecure_skip_verify:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if tls.cert_file:
        try:
            ctx.load_cert_chain(tls.cert_file, tls.key_file)
        except (ssl.SSLError, OSError) as exc:
            raise ConfigError(
                f"tls_config.cert_file: not a certificate that key_file fits ({_why(exc)})"
            ) from None
    return ctx


def _why(exc: OSError) -> str:
    reason = getattr(exc, "reason", None)
    return str(reason or exc.strerror or exc)


@dataclass(frozen=True)
class BasicAuth:
    username: str = field(default="", metadata=field_doc("User name sent with basic auth."))
    password: str = field(default="", metadata=field_doc("Basic-auth password.", secret=True))
    password_file: str = field(
        default="",
        metadata=field_doc("File holding the password (read before each request)."),
    )


@dataclass(frozen=True)
class TlsConfig:
    ca_file: str = field(
        default="", metadata=field_doc("CA certificates to verify the receiver with.")
    )
    cert_file: str = field(default="", metadata=field_doc("Client certificate (with key_file)."))
    key_file: str = field(default="", metadata=field_doc("Client certificate's key."))
    server_name: str = field(
        default="",
        metadata=field_doc(
            "Name the receiver's certificate must carry (and sent as SNI) when it is not the "
            "URL's host, as Prometheus' `tls_config.server_name`."
        ),
    )
    insecure_skip_verify: bool = field(
        default=False, metadata=field_doc("Do not verify the receiver's certificate.")
    )


@dataclass(frozen=True)
class RemoteWriteSettings:
    url: str = field(
        default="",
        metadata=field_doc(
            "Remote-write endpoint, e.g. `http://prometheus:9090/api/v1/write`; empty = off. "
            "Each minute's final figures are written once, at the minute's start "
            "(docs/remote-write.md). Query values (`?token=`) are masked wherever it is shown.",
            rule=r.custom(
                "empty, or an http(s) URL with a host and a port in 1-65535, no spaces, "
                "no credentials",
                check_url,
            ),
            url=True,
        ),
    )
    bearer_token: str = field(
        default="",
        metadata=field_doc("Sent as `Authorization: Bearer ...`.", secret=True),
    )
    bearer_token_file: str = field(
        default="",
        metadata=field_doc("File holding the bearer token (read before each request)."),
    )
    basic_auth: BasicAuth = field(
        default_factory=BasicAuth, metadata=field_doc("Basic auth towards the receiver.")
    )
    tls_config: TlsConfig = field(
        default_factory=TlsConfig, metadata=field_doc("TLS towards an https receiver.")
    )
    timeout_seconds: float = field(
        default=30.0,
        metadata=field_doc("Timeout of one remote-write request.", rule=r.positive()),
    )
    max_age_minutes: int = field(
        default=DEFAULT_MAX_AGE_MINUTES,
        metadata=field_doc(
            "A minute not acknowledged this long after it started is dropped unsent "
            '(counted as `outcome="too_old"`): keep it inside the receiver\'s out-of-order '
            "window (Prometheus `storage.tsdb.out_of_order_time_window`, 6 h in the docs).",
            rule=r.positive(),
        ),
    )

    @property
    def enabled(self) -> bool:
        return bool(self.url)


def warnings(settings: Settings) -> list[str]:
    rw = REMOTE_WRITE_SECTION.of(settings)
    if not rw.enabled:
        return []
    traffic = TRAFFIC_SECTION.of(settings)
    out = []
    if not traffic.state_file:
        out.append(
            "remote_write.url: without traffic.state_file a restart forgets which minutes "
            "were written and which are pending"
        )
    stages = traffic.settle_stages
    final_after = 1 + traffic.delay_seconds / 60 + (stages[-1] if stages else 0)
    if final_after >= rw.max_age_minutes:
        out.append(
            f"remote_write.max_age_minutes: {rw.max_age_minutes} is below the age at which a "
            f"minute is final (about {final_after:.0f} min: traffic.delay_seconds and the last "
            "age of traffic.revisit_minutes); every minute would be dropped as too old"
        )
    return out


REMOTE_WRITE_SECTION = AreaSection(
    "remote_write",
    RemoteWriteSettings,
    "Optional output: each traffic minute's final figures, written by Prometheus remote write "
    "with the minute's start as the sample timestamp (docs/remote-write.md). Changes take "
    "effect at the next start.",
    rule=r.custom(
        "at most one of `bearer_token`, `bearer_token_file`, `basic_auth`; "
        "`tls_config.cert_file` with `key_file`; every file named readable, the TLS ones "
        "usable, and `tls_config` only with an https `url`",
        check_auth,
    ),
    warnings=warnings,
)
