"""Typed, frozen settings: every config key with its default, meaning and secrecy."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Generic, TypeVar, cast

from exporter.config import rules as r
from exporter.config.rules import ConfigError as ConfigError
from exporter.config.rules import Rule
from exporter.config.rules import split_host_port as split_host_port
from exporter.support.urls import url_secrets

SECRET_MASK = "********"
S = TypeVar("S")


def field_doc(
    text: str, secret: bool = False, rule: Rule | None = None, url: bool = False
) -> dict[str, Any]:
    """Field metadata: what the key means, whether it is a secret, what values are accepted.

    The loader enforces ``rule`` (``rules.check_section``) and docs/configuration.md shows its
    text (``python -m exporter.docgen``): one statement of each rule. ``url``: a URL that may
    carry secrets in its query (``?token=``): shown masked, its secrets redacted in logs.
    """
    return {"doc": text, "secret": secret, "rule": rule, "url": url}


@dataclass(frozen=True)
class UpstreamSettings:
    base_url: str = field(
        default="https://api.cdnvideo.ru",
        metadata=field_doc(
            "Platform API base URL. White-label copies of the platform work the same: set "
            "their API host here. Env `CDNVIDEO_BASE_URL`.",
            rule=r.custom(
                "http(s) URL; no credentials, query or fragment; a path prefix is kept",
                r.check_base_url,
            ),
        ),
    )
    token: str = field(
        default="",
        metadata=field_doc(
            "Static `CDN-AUTH-TOKEN`, sent as is and never renewed: when the platform refuses "
            "it (401, or 403 saying the token is invalid or expired) the area's `cdnvideo_up` "
            "turns 0 and one `upstream_token_rejected` line is logged. Env `CDNVIDEO_TOKEN`.",
            secret=True,
            rule=r.custom("either `token` or `username` + `password`", r.check_token),
        ),
    )
    token_file: str = field(
        default="",
        metadata=field_doc(
            "File holding the token (a Kubernetes secret volume, a systemd credential): read "
            "at start and on every reload, a trailing newline dropped, its content never "
            "logged. Instead of `token` (not both); a reload that finds a new token in it "
            "applies it.",
        ),
    )
    username: str = field(
        default="",
        metadata=field_doc(
            "Portal login. A token is fetched from `/app/oauth/v1/token/`, renewed after 80% "
            "of its lifetime, and once (with one retry of the request) when the platform refuses "
            "it: 401 with or without a body, or 403 saying the token is invalid or expired. A "
            "token under 30 s old is not renewed again. A rejected password is "
            "never tried again until restart. Env `CDNVIDEO_USERNAME`.",
            rule=r.custom("with `password`, instead of `token`", r.half_of_login("password")),
        ),
    )
    password: str = field(
        default="",
        metadata=field_doc(
            "Portal password. Env `CDNVIDEO_PASSWORD`.",
            secret=True,
            rule=r.custom("with `username`, instead of `token`", r.half_of_login("username")),
        ),
    )
    password_file: str = field(
        default="",
        metadata=field_doc(
            "File holding the password, read like `token_file` (at start and on every reload). "
            "Instead of `password` (not both).",
        ),
    )
    timeout_seconds: float = field(
        default=10.0,
        metadata=field_doc(
            "Timeout of one upstream request, start to end of body.", rule=r.positive()
        ),
    )
    max_concurrency: int = field(
        default=8,
        metadata=field_doc(
            "Upstream requests in flight at most, over all areas.", rule=r.positive()
        ),
    )
    max_requests_per_minute: int = field(
        default=0,
        metadata=field_doc(
            "Request budget per account, shared by every area (one token bucket): traffic "
            "reads come first, restream history and DVR reads are spread over their interval, "
            "and a poll the budget cannot afford is postponed to its next interval and counted "
            "in `cdnvideo_upstream_polls_postponed_total`. 0 = no limit. Whatever the value, "
            "a rate-limit answer of the platform (429, 420, or a 200 body `Rate limit "
            "exceeded`) pauses the account for its `Retry-After` and then lets it recover "
            "gradually (docs/performance.md).",
            rule=r.at_least(0),
        ),
    )


@dataclass(frozen=True)
class AccountSettings:
    name: str = field(
        default="",
        metadata=field_doc(
            "Account name as used in the API paths.",
            rule=r.custom(
                "required; no '/', not '.' or '..', no surrounding spaces",
                r.check_account_name,
            ),
        ),
    )
    dvr_streams: tuple[str, ...] = field(
        default=(),
        metadata=field_doc(
            "DVR streams to watch. A name may contain '/' (`live/main`); a single name may "
            "be given without the list.",
            rule=r.custom("no empty, '.' or '..' segments; no duplicates", r.check_streams),
        ),
    )


@dataclass(frozen=True)
class AdminSettings:
    enabled: bool = field(
        default=False,
        metadata=field_doc(
            "Serve the `/api/v1` admin surface.",
            rule=r.custom("`write_token` is required when true", r.check_admin_enabled),
        ),
    )
    read_token: str = field(
        default="",
        metadata=field_doc(
            "Bearer token for reads. Env `CDNVIDEO_ADMIN_READ_TOKEN`.",
            secret=True,
            rule=r.custom("at least 16 characters; differs from `write_token`", r.check_read_token),
        ),
    )
    write_token: str = field(
        default="",
        metadata=field_doc(
            "Bearer token for reads and changes. Env `CDNVIDEO_ADMIN_WRITE_TOKEN`.",
            secret=True,
            rule=r.custom(
                "at least 16 characters; required when `enabled` is true (checked with `enabled`)",
                r.check_write_token,
            ),
        ),
    )
    read_token_file: str = field(
        default="",
        metadata=field_doc(
            "File holding `read_token`, read at start and on every reload when `enabled` "
            "(a trailing newline dropped, never logged). Instead of `read_token` (not both).",
        ),
    )
    write_token_file: str = field(
        default="",
        metadata=field_doc(
            "File holding `write_token`, read like `read_token_file`. Instead of `write_token` "
            "(not both).",
        ),
    )
    replicas_per_shard: int = field(
        default=1,
        metadata=field_doc(
            "How many replicas serve the same accounts (copies of one shard behind one "
            "Service). The platform allows 10 generate requests a minute per account; each "
            "replica allows its share, `10 // replicas_per_shard`, so together they stay "
            "within it. The shipped StatefulSet runs 2.",
            rule=r.custom("1-10", r.check_replicas),
        ),
    )
    auth_failures_per_minute: int = field(
        default=10,
        metadata=field_doc(
            "Failed authentications (no token or a wrong one) a minute from one address, or "
            "with one wrong credential from any address, before further failures there get 429 "
            "instead of 401 until the minute has passed; counted together over the admin "
            "routes, the OpenAPI document and `POST /-/reload`, in a table of at most 10,000 "
            "keys (the one idle longest evicted). A right token is never throttled. "
            "0 turns the throttle off (`exporter demo` does: it is tried and fuzzed on loopback).",
            rule=r.custom("0 or more", r.check_auth_failures),
        ),
    )
    upstream_concurrency: int = field(
        default=2,
        metadata=field_doc(
            "Upstream requests of the admin surface in flight at most, in slots of its own: "
            "pollers holding every one of `upstream.max_concurrency` never make an admin "
            "request wait for a slot.",
            rule=r.positive(),
        ),
    )
    upstream_deadline_seconds: float = field(
        default=15.0,
        metadata=field_doc(
            "The longest an admin request waits for the platform (a retried read's attempts "
            "included) before it answers 504 itself.",
            rule=r.positive(),
        ),
    )
    talking_head_reads_per_day: int = field(
        default=50,
        metadata=field_doc(
            "Talking-head reads through the admin surface (status, video link, tasks, and "
            "configurations when the poll's are not fresh) per account in any 24 hours; one "
            "more is answered 429 with `Retry-After`; each retry of a read counts as one. "
            "Shared by the `admin.replicas_per_shard` copies of a shard (each allows this // "
            "replicas_per_shard). The platform allows 1500 talking-head "
            "requests a month per account in all: the default is a day's share of them. "
            "Configurations and quota are answered from the last poll while it succeeded and is "
            "younger than `talking_head.interval_seconds`, and spend nothing. 0 refuses every "
            "talking-head read that would reach the platform.",
            rule=r.at_least(0),
        ),
    )
    reads_per_minute: int = field(
        default=30,
        metadata=field_doc(
            "Admin reads that reach the platform (every GET of restream, DVR and talking-head) "
            "per account in any minute, on this replica (shared by `replicas_per_shard` like "
            "the generate limit); one more is answered 429 with `Retry-After` and nothing is "
            "sent. A budget of the admin surface's own: it spends nothing of "
            "`upstream.max_requests_per_minute`, and a rate limit the platform answers to an "
            "admin request goes back to the caller without pausing the pollers. 0 refuses "
            "every admin read that would reach the platform.",
            rule=r.at_least(0),
        ),
    )
    state_file: str = field(
        default="",
        metadata=field_doc(
            "Where the talking-head reads of the last 24 hours survive restarts. Empty: next "
            "to `traffic.state_file` (its name + `.admin`), or in memory only when that is "
            "empty too. Checked at start as `traffic.state_file` is (directories made, an "
            "unwritable path an error).",
        ),
    )
    trusted_proxy_header: str = field(
        default="",
        metadata=field_doc(
            "Request header that carries the caller's address as the ingress or proxy in front "
            "saw it, such as `X-Forwarded-For` (its last address is taken) or `X-Real-IP`; "
            "failed authentications are counted per that address and the audit log names it. "
            "Set it only when every request comes through that proxy: a caller reaching the "
            "exporter directly can write any address into it. Empty: the connection's address.",
            rule=r.custom("empty or an HTTP header name", r.check_header_name),
        ),
    )


@dataclass(frozen=True)
class ServerSettings:
    header_timeout_seconds: float = field(
        default=10.0,
        metadata=field_doc(
            "A client has this long to send a request's line and headers, counted from when "
            "its connection opened or from the previous reply (an idle keep-alive connection "
            "is closed then too); a TLS handshake has as long. A half-sent request is closed.",
            rule=r.positive(),
        ),
    )
    body_timeout_seconds: float = field(
        default=30.0,
        metadata=field_doc(
            "A request body has this long to arrive once its headers have: the admin API "
            "answers 408 after it, and a body no handler reads is drained at most this long.",
            rule=r.positive(),
        ),
    )
    max_connections: int = field(
        default=512,
        metadata=field_doc(
            "Open client connections at most; one more is answered 503 and closed before a "
            "byte of it is read. Prometheus needs one per scraping server.",
            rule=r.positive(),
        ),
    )


@dataclass(frozen=True)
class LogSettings:
    level: str = field(
        default="info",
        metadata=field_doc(
            "Lowest level written; `warn` is the same as `warning`. `run --log.level` "
            "overrides it.",
            rule=r.one_of("debug", "info", "warn", "warning", "error"),
        ),
    )
    format: str = field(
        default="auto",
        metadata=field_doc(
            "`auto`: console on a terminal, JSON otherwise; `logfmt`: `key=value` lines as "
            "the Prometheus tools write them (`ts`, `level`, `msg`, `caller` first; values "
            "quoted where needed, lists comma-joined); `json`: one object a line with the "
            "same keys in the same order (`level` `warn`, as in logfmt), so a pipeline that "
            "parses one format finds the same names in the other. Secrets are masked in "
            "every format, and "
            "every record is one line: in logfmt and console output, CR, LF, other control "
            "characters and the Unicode line separators of a value are written as escapes "
            "(`\\r`, `\\n`, `\\x1b`, `\\u2028`; JSON escapes them itself). `run --log.format` "
            "overrides it.",
            rule=r.one_of("auto", "console", "logfmt", "json"),
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
class MetricsSettings:
    include: tuple[str, ...] = field(
        default=(),
        metadata=field_doc(
            "Regular expressions over family names: when any are given, only the families "
            "one of them matches are exported (matched with `re.search`: anywhere in the name; "
            "anchor with `^...$` for a whole name). The exporter's own health families "
            "(`cdnvideo_up`, `cdnvideo_exporter_build_info` and the other self-metrics) are "
            "always exported; check-config says when a pattern would have matched one.",
            rule=r.regexes(),
        ),
    )
    exclude: tuple[str, ...] = field(
        default=(),
        metadata=field_doc(
            "Regular expressions over family names: a family one of them matches is not "
            "exported (its series are neither built nor rendered). Applied after `include`; "
            "health families stay.",
            rule=r.regexes(),
        ),
    )


@dataclass(frozen=True)
class AreaSection(Generic[S]):
    """An area's settings section, declared in the area's package
    (``AreaDeclaration.settings``): read from the top-level key ``name`` into
    ``Settings.areas[name]`` (a ``type`` instance; every key at its default when the section is
    left out), listed in docs/configuration.md (``doc``; ``rule``, when set, over the whole
    section) and by check-config.

    The hooks are the area's rules that involve other sections: ``rule.check(name, section,
    settings)`` refuses a config as a field's rule does, ``notes(settings)`` and
    ``warnings(settings)`` are what check-config prints of the area (``config.report``). ``of``
    is the typed way to the section: ``TRAFFIC_SECTION.of(settings)`` is a ``TrafficSettings``.
    """

    name: str
    type: type[S]
    doc: str
    rule: Rule | None = None
    notes: Callable[[Settings], list[str]] = field(default=lambda settings: [])
    warnings: Callable[[Settings], list[str]] = field(default=lambda settings: [])

    def of(self, settings: Settings) -> S:
        """The section in ``settings`` (its defaults when the settings were built without it)."""
        section = settings.areas.get(self.name)
        return self.type() if section is None else cast(S, section)

    def replace(self, settings: Settings, section: S) -> Settings:
        """``settings`` with this area's section ``section``."""
        areas = MappingProxyType({**settings.areas, self.name: section})
        return dataclasses.replace(settings, areas=areas)


@dataclass(frozen=True)
class Settings:
    upstream: UpstreamSettings = field(
        default_factory=UpstreamSettings,
        metadata=field_doc("Where the platform is and how to log in."),
    )
    accounts: tuple[AccountSettings, ...] | None = field(
        default=None,
        metadata=field_doc(
            "Accounts to export. Leave the key out to discover them from "
            "`/app/inventory/v1/accounts/`; an item may be just the name.",
            rule=r.custom("a non-empty list; each account name once", r.check_accounts),
        ),
    )
    # The areas' sections (each declared with an AreaSection in its area's package), by name,
    # in the registry's order (the loader fills it; AreaSection.of reads one).
    areas: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    metrics: MetricsSettings = field(
        default_factory=MetricsSettings,
        metadata=field_doc(
            "Which metric families are exported (docs/metrics.md, Choosing families)."
        ),
    )
    listen: str = field(
        default="0.0.0.0:9877",
        metadata=field_doc(
            "Address of `/metrics`, `/healthz`, `/readyz`, the landing page and the admin API.",
            rule=r.custom(
                "HOST:PORT; [::1]:9877 for IPv6; :9877 for every interface",
                r.check_listen,
            ),
        ),
    )
    web_config_file: str = field(
        default="",
        metadata=field_doc(
            "An exporter-toolkit web configuration file (the `--web.config.file` of "
            "node_exporter and the rest): TLS, basic auth, response headers. Relative paths in "
            "it are relative to that file. `run --web.config.file FILE` overrides this key. "
            "See docs/deploy.md, TLS and basic auth.",
            rule=r.Rule(
                "a readable file in the toolkit's format; checked at start-up and by check-config",
                checked_by="exporter/web/webconfig.py, when run or check-config starts",
            ),
        ),
    )
    shard: Shard = field(
        default_factory=Shard,
        metadata=field_doc(
            "`INDEX/COUNT`: this replica serves the accounts whose stable hash modulo COUNT "
            "is INDEX (see Sharding). Env `CDNVIDEO_SHARD`.",
            rule=r.Rule(
                "0 <= INDEX < COUNT",
                checked_by="the INDEX/COUNT parser (loader._parse_shard) and Shard itself",
            ),
        ),
    )
    admin: AdminSettings = field(
        default_factory=AdminSettings, metadata=field_doc("The authenticated `/api/v1` gateway.")
    )
    server: ServerSettings = field(
        default_factory=ServerSettings,
        metadata=field_doc("How long clients may take and how many may be connected (`listen`)."),
    )
    log: LogSettings = field(default_factory=LogSettings, metadata=field_doc("Log output."))

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
        values += [v for section in self.areas.values() for v in _secret_values(section)]
        return [v for v in values if v]


def _secret_values(section: Any) -> list[str]:
    """The secret fields' values of a settings section, nested sections included."""
    out: list[str] = []
    if not dataclasses.is_dataclass(section) or isinstance(section, type):
        return out
    for f in dataclasses.fields(section):
        value = getattr(section, f.name)
        if f.metadata.get("secret") and isinstance(value, str):
            out.append(value)
        elif f.metadata.get("url") and isinstance(value, str):
            out += url_secrets(value)
        else:
            out += _secret_values(value)
    return out


SECTIONS: dict[str, type[Any]] = {
    "upstream": UpstreamSettings,
    "metrics": MetricsSettings,
    "admin": AdminSettings,
    "server": ServerSettings,
    "log": LogSettings,
}
TOP_LEVEL_KEYS = (*SECTIONS, "accounts", "listen", "web_config_file", "shard")

# Environment variables that override secrets (and the login) when set and non-empty.
ENV_OVERRIDES: dict[str, tuple[str, str]] = {
    "CDNVIDEO_TOKEN": ("upstream", "token"),
    "CDNVIDEO_USERNAME": ("upstream", "username"),
    "CDNVIDEO_PASSWORD": ("upstream", "password"),
    "CDNVIDEO_BASE_URL": ("upstream", "base_url"),
    "CDNVIDEO_ADMIN_READ_TOKEN": ("admin", "read_token"),
    "CDNVIDEO_ADMIN_WRITE_TOKEN": ("admin", "write_token"),
}
# Overrides the top-level ``shard``.
SHARD_ENV = "CDNVIDEO_SHARD"
# A StatefulSet's way to the shard, without a shell in the container: with CDNVIDEO_SHARDS=N
# (and no CDNVIDEO_SHARD) the pod named ``<set>-<ordinal>`` in POD_NAME serves ordinal % N.
SHARDS_ENV = "CDNVIDEO_SHARDS"
POD_NAME_ENV = "POD_NAME"


def stable_hash(text: str) -> int:
    """A hash that is the same in every process and release (FNV-1a, 32 bit)."""
    h = 0x811C9DC5
    for byte in text.encode():
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h


_declared: list[Callable[[], Sequence[AreaSection[Any]]]] = []


def declare_areas(sections: Callable[[], Sequence[AreaSection[Any]]]) -> None:
    """Hand the config the areas' sections from above (the registry does, when imported):
    ``sections()`` is read each time a config is parsed or reported without sections of its
    own, so config names no area and imports no area package."""
    _declared[:] = [sections]


def declared_areas() -> tuple[AreaSection[Any], ...]:
    """The sections ``declare_areas`` handed down. Before it was called there are none, and a
    config read then would refuse every area's key as unknown: that is a mistake of the
    caller, said as such."""
    if not _declared:
        raise RuntimeError(
            "no areas declared: import exporter.runtime.registry first (it hands the areas' "
            "settings sections to config), or pass areas= explicitly"
        )
    return tuple(_declared[0]())
