"""Command-line flags in the Prometheus style, and how they override the config file.

``--web.listen-address``, ``--log.level`` and ``--log.format`` replace the file's ``listen``,
``log.level`` and ``log.format``; ``--web.config.file`` its ``web_config_file``;
``--collector.<area>`` / ``--no-collector.<area>`` the area's ``enabled`` (set in the
document before it is checked, so the rules, and the ``${VAR}`` a switched-off area no longer
needs, follow the flag). The flags
without a config key (``--web.telemetry-path``, ``--web.enable-lifecycle``) are read from
``Flags`` directly. A reload re-reads the file and applies the same flags again.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from exporter.config.loader import load_config
from exporter.config.rules import ConfigError, split_host_port
from exporter.config.settings import AreaSection, Settings

LOG_LEVELS = ("debug", "info", "warn", "error")
LOG_FORMATS = ("auto", "console", "logfmt", "json")  # as log.format takes them
# Routes the telemetry path must not take over.
RESERVED_PATHS = ("/", "/healthz", "/readyz", "/-/healthy", "/-/ready", "/-/reload", "/api/v1")


@dataclass(frozen=True)
class Flags:
    """What the command line said; None: the config file decides."""

    config_file: str
    web_config_file: str | None = None
    listen_address: str | None = None
    telemetry_path: str = "/metrics"
    enable_lifecycle: bool = False
    log_level: str | None = None
    log_format: str | None = None
    # (area, enabled) of each --collector.<area> / --no-collector.<area> given
    collectors: tuple[tuple[str, bool], ...] = ()

    def overridden(self) -> list[str]:
        """The config keys these flags set, for check-config."""
        keys = {
            "listen": self.listen_address,
            "web_config_file": self.web_config_file,
            "log.level": self.log_level,
            "log.format": self.log_format,
        }
        named = [key for key, value in keys.items() if value is not None]
        return named + [f"{area}.enabled" for area, _ in self.collectors]


def check_telemetry_path(path: str) -> str:
    if not re.fullmatch(r"/[A-Za-z0-9._~/-]*", path) or "//" in path:
        raise ConfigError(
            f"--web.telemetry-path: expected a URL path such as /metrics, got {path!r}"
        )
    for reserved in RESERVED_PATHS:
        if path.rstrip("/") == reserved.rstrip("/") or path.startswith("/api/v1/"):
            raise ConfigError(f"--web.telemetry-path: {path!r} is taken by another route")
    return path


def apply_flags(settings: Settings, flags: Flags) -> Settings:
    """``settings`` with the flags that name a config key in force."""
    changes: dict[str, object] = {}
    if flags.listen_address is not None:
        split_host_port(flags.listen_address, "--web.listen-address")
        changes["listen"] = flags.listen_address
    if flags.web_config_file is not None:
        changes["web_config_file"] = flags.web_config_file
    log = settings.log
    if flags.log_level is not None:
        log = dataclasses.replace(log, level=flags.log_level)
    if flags.log_format is not None:
        log = dataclasses.replace(log, format=flags.log_format)
    return dataclasses.replace(settings, log=log, **changes)  # type: ignore[arg-type]


def load_settings(flags: Flags, areas: Sequence[AreaSection[Any]] | None = None) -> Settings:
    """The config file as the flags override it (ConfigError naming every problem);
    ``areas``: the declared areas' sections (``parse_config``)."""
    check_telemetry_path(flags.telemetry_path)
    switched = dict(flags.collectors)
    return apply_flags(load_config(flags.config_file, areas=areas, switched=switched), flags)
