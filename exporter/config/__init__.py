"""Load the YAML config into frozen, typed settings; refuse bad values with a pointed message.

``settings`` holds the typed sections, ``loader`` reads and validates a file, ``report``
renders what check-config prints.
"""

from exporter.config.loader import expand_env, load_config, parse_config
from exporter.config.report import (
    masked_dict,
    notes,
    talking_head_requests_per_month,
    traffic_requests_per_minute,
    warnings,
)
from exporter.config.settings import (
    ENV_OVERRIDES,
    SECONDS_PER_MONTH,
    SECRET_MASK,
    SECTIONS,
    SHARD_ENV,
    TALKING_HEAD_MONTHLY_ALLOWANCE,
    TOP_LEVEL_KEYS,
    AccountSettings,
    AdminSettings,
    AreaSection,
    ConfigError,
    DvrSettings,
    LogSettings,
    MetricsSettings,
    RestreamSettings,
    ServerSettings,
    Settings,
    Shard,
    TalkingHeadSettings,
    TrafficSettings,
    UpstreamSettings,
    split_host_port,
    stable_hash,
)

__all__ = [
    "ENV_OVERRIDES",
    "SECONDS_PER_MONTH",
    "SECRET_MASK",
    "SECTIONS",
    "SHARD_ENV",
    "TALKING_HEAD_MONTHLY_ALLOWANCE",
    "TOP_LEVEL_KEYS",
    "AccountSettings",
    "AdminSettings",
    "AreaSection",
    "ConfigError",
    "DvrSettings",
    "LogSettings",
    "MetricsSettings",
    "RestreamSettings",
    "ServerSettings",
    "Settings",
    "Shard",
    "TalkingHeadSettings",
    "TrafficSettings",
    "UpstreamSettings",
    "expand_env",
    "load_config",
    "masked_dict",
    "notes",
    "parse_config",
    "split_host_port",
    "stable_hash",
    "talking_head_requests_per_month",
    "traffic_requests_per_minute",
    "warnings",
]
