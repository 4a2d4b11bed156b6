"""Typed, frozen settings: every config key with its default, meaning and secrecy."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from exporter.config import rules as r
from exporter.config.rules import ConfigError as ConfigError
from exporter.config.rules import Rule
from exporter.config.rules import split_host_port as split_host_port

SECRET_MASK = "********"
TALKING_HEAD_MONTHLY_ALLOWANCE = 1500
SECONDS_PER_MONTH = 30 * 86400
RESOURCE_STATUS_CODES = ("codes", "classes")  # traffic.resource_status_codes


def _doc(text: str, secret: bool = False, rule: Rule | None = None) -> dict[str, Any]:
    """Field metadata: what the key means, whether it is a secret, what values are accepted.

    The loader enforces ``rule`` (``rules.check_section``) and docs/configuration.md shows its
    text (``python -m exporter.docgen``): one statement of each rule.
    """
    return {"doc": text, "secret": secret, "rule": rule}


@dataclass(frozen=True)
class UpstreamSettings:
    base_url: str = field(
        default="https://api.cdnvideo.ru",
        metadata=_doc(
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
        metadata=_doc(
            "Static `CDN-AUTH-TOKEN`, sent as is and never renewed: when the platform refuses "
            "it (401, or 403 saying the token is invalid or expired) the area's `cdnvideo_up` "
            "turns 0 and one `upstream_token_rejected` line is logged. Env `CDNVIDEO_TOKEN`.",
            secret=True,
            rule=r.custom("either `token` or `username` + `password`", r.check_token),
        ),
    )
    username: str = field(
        default="",
        metadata=_doc(
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
        metadata=_doc(
            "Portal password. Env `CDNVIDEO_PASSWORD`.",
            secret=True,
            rule=r.custom("with `username`, instead of `token`", r.half_of_login("username")),
        ),
    )
    timeout_seconds: float = field(
        default=10.0,
        metadata=_doc("Timeout of one upstream request, start to end of body.", rule=r.positive()),
    )
    max_concurrency: int = field(
        default=8,
        metadata=_doc("Upstream requests in flight at most, over all areas.", rule=r.positive()),
    )
    max_requests_per_minute: int = field(
        default=0,
        metadata=_doc(
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
        metadata=_doc(
            "Account name as used in the API paths.",
            rule=r.custom(
                "required; no '/', not '.' or '..', no surrounding spaces",
                r.check_account_name,
            ),
        ),
    )
    dvr_streams: tuple[str, ...] = field(
        default=(),
        metadata=_doc(
            "DVR streams to watch. A name may contain '/' (`live/main`); a single name may "
            "be given without the list.",
            rule=r.custom("no empty, '.' or '..' segments; no duplicates", r.check_streams),
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
            rule=r.at_least(0, ">= 0; below 60 check-config warns"),
        ),
    )
    revisit_minutes: int | tuple[int, ...] = field(
        default=5,
        metadata=_doc(
            "Settle reads: re-read recent minutes this long after their first read and add "
            "only late increases, so each counter counts every request exactly once. A list "
            "such as `[5, 15, 60]` re-reads them at each of these ages (later stages in "
            "windows of up to 10 minutes); `0` turns settling off. See docs/windowing.md.",
            rule=r.custom(
                "0-10, or a list of rising ages 1-1440 (the first at most 10)", r.check_schedule
            ),
        ),
    )
    catch_up_minutes: int = field(
        default=60,
        metadata=_doc(
            "Longest gap backfilled after an outage or restart; older minutes are counted "
            'as `cdnvideo_traffic_windows_total{outcome="missed"}`.',
            rule=r.at_least(0),
        ),
    )
    per_resource: bool = field(
        default=True, metadata=_doc("Also export the `cdnvideo_resource_*` series.")
    )
    resources_include: str = field(
        default=".*",
        metadata=_doc(
            "Regular expression a resource id or name must match to be exported.",
            rule=r.regex(),
        ),
    )
    resources_exclude: str = field(
        default="",
        metadata=_doc(
            "Regular expression that drops matching resources (empty: none).",
            rule=r.regex(),
        ),
    )
    resource_status_codes: str = field(
        default="codes",
        metadata=_doc(
            "Status codes of the per-resource response families: `codes`, the platform's 22 "
            "keys (200 ... 5xx); `classes`, only its class keys `2xx`, `3xx`, `4xx`, `5xx` "
            "(each the platform's count for the whole class), 8 series per side and family "
            "instead of 44. Account families keep every code.",
            rule=r.one_of(*RESOURCE_STATUS_CODES),
        ),
    )
    resource_request_times: bool = field(
        default=True,
        metadata=_doc(
            "Export `cdnvideo_resource_response_time_median_seconds` (16 series a resource); "
            "`false` leaves it out. The account family stays."
        ),
    )
    max_resources: int = field(
        default=0,
        metadata=_doc(
            "0: no cap. N: the top N resources by edge traffic, the rest summed as "
            '`resource="__other__"`.',
            rule=r.at_least(0),
        ),
    )
    state_file: str = field(
        default="",
        metadata=_doc(
            "File where the accounted-minute cursor survives restarts (empty: kept in "
            "memory only, so a restart starts the counters afresh at the newest minute)."
        ),
    )
    series_retention_hours: float = field(
        default=24.0,
        metadata=_doc(
            "A resource's counter series (and `__other__`) stays exposed at its last value "
            "this long after the resource was last seen, so one that comes back continues it.",
            rule=r.at_least(0),
        ),
    )

    @property
    def settle_stages(self) -> tuple[int, ...]:
        """The ages in minutes of the settle reads, rising (empty: settling off)."""
        r = self.revisit_minutes
        if isinstance(r, int):
            return (r,) if r else ()
        return tuple(r)


@dataclass(frozen=True)
class RestreamSettings:
    enabled: bool = field(default=True, metadata=_doc("Poll restream resources and status."))
    interval_seconds: float = field(
        default=30.0, metadata=_doc("Period of the resources + status poll.", rule=r.positive())
    )
    history_interval_seconds: float = field(
        default=300.0, metadata=_doc("Period of the status-history poll.", rule=r.positive())
    )


@dataclass(frozen=True)
class DvrSettings:
    enabled: bool = field(default=True, metadata=_doc("Poll the `dvr_streams` of every account."))
    interval_seconds: float = field(
        default=60.0, metadata=_doc("DVR poll period.", rule=r.positive())
    )
    poll_slices: int = field(
        default=1,
        metadata=_doc(
            "Read each account's streams in this many slices, one slice per poll in turn: a "
            "stream is read once every `poll_slices` polls (its figures up to that many "
            "intervals old) and DVR sends that many times fewer requests "
            "(docs/performance.md). 1 = every stream on every poll.",
            rule=r.at_least(1),
        ),
    )


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
            rule=r.Rule("> 0; below 17280 check-config warns", r.positive().check),
        ),
    )


@dataclass(frozen=True)
class AdminSettings:
    enabled: bool = field(
        default=False,
        metadata=_doc(
            "Serve the `/api/v1` admin surface.",
            rule=r.custom("`write_token` is required when true", r.check_admin_enabled),
        ),
    )
    read_token: str = field(
        default="",
        metadata=_doc(
            "Bearer token for reads. Env `CDNVIDEO_ADMIN_READ_TOKEN`.",
            secret=True,
            rule=r.custom("at least 16 characters; differs from `write_token`", r.check_read_token),
        ),
    )
    write_token: str = field(
        default="",
        metadata=_doc(
            "Bearer token for reads and changes. Env `CDNVIDEO_ADMIN_WRITE_TOKEN`.",
            secret=True,
            rule=r.custom(
                "at least 16 characters; required when `enabled` is true (checked with `enabled`)",
                r.check_write_token,
            ),
        ),
    )
    replicas_per_shard: int = field(
        default=1,
        metadata=_doc(
            "How many replicas serve the same accounts (copies of one shard behind one "
            "Service). The platform allows 10 generate requests a minute per account; each "
            "replica allows its share, `10 // replicas_per_shard`, so together they stay "
            "within it. The shipped StatefulSet runs 2.",
            rule=r.custom("1-10", r.check_replicas),
        ),
    )
    auth_failures_per_minute: int = field(
        default=10,
        metadata=_doc(
            "Failed authentications (no token or a wrong one) a minute from one address, or "
            "with one wrong credential from any address, before further failures there get 429 "
            "instead of 401 until the minute has passed. A right token is never throttled. "
            "0 turns the throttle off (`exporter demo` does: it is tried and fuzzed on loopback).",
            rule=r.custom("0 or more", r.check_auth_failures),
        ),
    )
    upstream_concurrency: int = field(
        default=2,
        metadata=_doc(
            "Upstream requests of the admin surface in flight at most, in slots of its own: "
            "pollers holding every one of `upstream.max_concurrency` never make an admin "
            "request wait for a slot.",
            rule=r.positive(),
        ),
    )
    upstream_deadline_seconds: float = field(
        default=15.0,
        metadata=_doc(
            "The longest an admin request waits for the platform (a retried read's attempts "
            "included) before it answers 504 itself.",
            rule=r.positive(),
        ),
    )
    talking_head_reads_per_day: int = field(
        default=50,
        metadata=_doc(
            "Talking-head reads through the admin surface (status, video link, tasks, and "
            "configurations when the poll's are not fresh) per account in any 24 hours; one "
            "more is answered 429 with `Retry-After`. The platform allows 1500 talking-head "
            "requests a month per account in all: the default is a day's share of them. "
            "Configurations and quota are answered from the last poll while it succeeded and is "
            "younger than `talking_head.interval_seconds`, and spend nothing. 0 refuses every "
            "talking-head read that would reach the platform.",
            rule=r.at_least(0),
        ),
    )
    state_file: str = field(
        default="",
        metadata=_doc(
            "Where the talking-head reads of the last 24 hours survive restarts. Empty: next "
            "to `traffic.state_file` (its name + `.admin`), or in memory only when that is "
            "empty too.",
        ),
    )
    trusted_proxy_header: str = field(
        default="",
        metadata=_doc(
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
        metadata=_doc(
            "A client has this long to send a request's line and headers, counted from when "
            "its connection opened or from the previous reply (an idle keep-alive connection "
            "is closed then too); a TLS handshake has as long. A half-sent request is closed.",
            rule=r.positive(),
        ),
    )
    body_timeout_seconds: float = field(
        default=30.0,
        metadata=_doc(
            "A request body has this long to arrive once its headers have: the admin API "
            "answers 408 after it, and a body no handler reads is drained at most this long.",
            rule=r.positive(),
        ),
    )
    max_connections: int = field(
        default=512,
        metadata=_doc(
            "Open client connections at most; one more is answered 503 and closed before a "
            "byte of it is read. Prometheus needs one per scraping server.",
            rule=r.positive(),
        ),
    )


@dataclass(frozen=True)
class LogSettings:
    level: str = field(
        default="info",
        metadata=_doc(
            "Lowest level written; `warn` is the same as `warning`. `run --log.level` "
            "overrides it.",
            rule=r.one_of("debug", "info", "warn", "warning", "error"),
        ),
    )
    format: str = field(
        default="auto",
        metadata=_doc(
            "`auto`: console on a terminal, JSON otherwise; `logfmt`: `key=value` lines as "
            "the Prometheus tools write. Secrets are masked in every format. `run --log.format` "
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
        metadata=_doc(
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
        metadata=_doc(
            "Regular expressions over family names: a family one of them matches is not "
            "exported (its series are neither built nor rendered). Applied after `include`; "
            "health families stay.",
            rule=r.regexes(),
        ),
    )


@dataclass(frozen=True)
class AreaSection:
    """The settings section of an area that is not a typed field of ``Settings``: declared in
    the area's package (``AreaDeclaration.settings``), read from the top-level key ``name``
    into ``Settings.areas[name]`` (a ``type`` instance; every key at its default when the
    section is left out), listed in docs/configuration.md and by check-config."""

    name: str
    type: type[Any]
    doc: str


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
            rule=r.custom("a non-empty list; each account name once", r.check_accounts),
        ),
    )
    traffic: TrafficSettings = field(
        default_factory=TrafficSettings,
        metadata=_doc(
            "Traffic metrics, read minute by minute.",
            rule=r.custom(
                "with `upstream.max_requests_per_minute` set, that budget must be at least "
                "the requests a minute the traffic schedule costs (check-config prints it)",
                r.check_traffic_budget,
            ),
        ),
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
    metrics: MetricsSettings = field(
        default_factory=MetricsSettings,
        metadata=_doc("Which metric families are exported (docs/metrics.md, Choosing families)."),
    )
    listen: str = field(
        default="0.0.0.0:9877",
        metadata=_doc(
            "Address of `/metrics`, `/healthz`, `/readyz`, the landing page and the admin API.",
            rule=r.custom(
                "HOST:PORT; [::1]:9877 for IPv6; :9877 for every interface",
                r.check_listen,
            ),
        ),
    )
    web_config_file: str = field(
        default="",
        metadata=_doc(
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
        metadata=_doc(
            "`INDEX/COUNT`: this replica serves the accounts whose stable hash modulo COUNT "
            "is INDEX (see Sharding). Env `CDNVIDEO_SHARD`.",
            rule=r.Rule(
                "0 <= INDEX < COUNT",
                checked_by="the INDEX/COUNT parser (loader._parse_shard) and Shard itself",
            ),
        ),
    )
    admin: AdminSettings = field(
        default_factory=AdminSettings, metadata=_doc("The authenticated `/api/v1` gateway.")
    )
    server: ServerSettings = field(
        default_factory=ServerSettings,
        metadata=_doc("How long clients may take and how many may be connected (`listen`)."),
    )
    log: LogSettings = field(default_factory=LogSettings, metadata=_doc("Log output."))
    # The sections of the areas declared with an AreaSection, by name (the loader fills it).
    areas: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

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
# Overrides the top-level ``shard`` (deploy/k8s/statefulset.yaml derives it from the pod ordinal).
SHARD_ENV = "CDNVIDEO_SHARD"


def stable_hash(text: str) -> int:
    """A hash that is the same in every process and release (FNV-1a, 32 bit)."""
    h = 0x811C9DC5
    for byte in text.encode():
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h
