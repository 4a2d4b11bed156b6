"""Load the YAML config into frozen, typed settings; refuse bad values with a pointed message.

``settings`` holds the typed sections, ``loader`` reads and validates a file, ``report``
renders what check-config prints.
"""

from exporter.config.loader import expand_env, load_config, parse_config
from exporter.config.report import (
    masked_dict,
    notes,
    warnings,
)
from exporter.config.settings import (
    ENV_OVERRIDES,
    POD_NAME_ENV,
    SECRET_MASK,
    SECTIONS,
    SHARD_ENV,
    SHARDS_ENV,
    TOP_LEVEL_KEYS,
    AccountSettings,
    AdminSettings,
    AreaSection,
    ConfigError,
    LogSettings,
    MetricsSettings,
    ServerSettings,
    Settings,
    Shard,
    UpstreamSettings,
    declare_areas,
    declared_areas,
    field_doc,
    split_host_port,
    stable_hash,
)

__all__ = [
    "ENV_OVERRIDES",
    "POD_NAME_ENV",
    "SECRET_MASK",
    "SECTIONS",
    "SHARDS_ENV",
    "SHARD_ENV",
    "TOP_LEVEL_KEYS",
    "AccountSettings",
    "AdminSettings",
    "AreaSection",
    "ConfigError",
    "LogSettings",
    "MetricsSettings",
    "ServerSettings",
    "Settings",
    "Shard",
    "UpstreamSettings",
    "declare_areas",
    "declared_areas",
    "expand_env",
    "field_doc",
    "load_config",
    "masked_dict",
    "notes",
    "parse_config",
    "split_host_port",
    "stable_hash",
    "warnings",
]
