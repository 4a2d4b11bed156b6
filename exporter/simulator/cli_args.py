"""Command-line options of `simulate`/`demo`: argparse flags onto a SimConfig."""

from __future__ import annotations

import argparse
from typing import Any

from exporter.simulator.config import SimConfig, account_names
from exporter.simulator.quirks import QUIRKS

# (flag, dest field of SimConfig, type, help)
_OPTIONS: tuple[tuple[str, str, Any, str], ...] = (
    ("--token", "token", str, "static CDN-AUTH-TOKEN accepted (default demo-token)"),
    ("--username", "username", str, "login for the token endpoint (default demo)"),
    ("--password", "password", str, "password for the token endpoint (default demo)"),
    (
        "--token-lifetime",
        "token_lifetime_seconds",
        float,
        "seconds an issued token lives (default 21599)",
    ),
    ("--seed", "seed", int, "seed of all generated data (default 1)"),
    ("--resources-per-account", "resources_per_account", int, "CDN resources per account (5)"),
    ("--restreams-per-account", "restreams_per_account", int, "restream resources per account (4)"),
    ("--dvr-streams-per-account", "dvr_streams_per_account", int, "DVR streams per account (2)"),
    (
        "--late-seconds",
        "late_seconds",
        float,
        "seconds after a minute closes until its figures are final (90)",
    ),
    (
        "--late-half-seconds",
        "late_half_seconds",
        float,
        "seconds after the close until half the late part arrived (0: the default curve)",
    ),
    (
        "--request-time-format",
        "request_time_format",
        str,
        "flat (edge_request_time_0_250k) or nested (edge_request_time: {...}); default flat",
    ),
    (
        "--max-window-minutes",
        "max_window_minutes",
        int,
        "longest metrics window accepted (10; 1 behaves like the newer docs)",
    ),
    (
        "--clock-offset-seconds",
        "clock_offset_seconds",
        float,
        "shift the simulated platform's clock (Date header, data) by this much (0)",
    ),
    (
        "--api-requests-per-minute",
        "api_requests_per_minute",
        int,
        "requests a minute per account over the APIs (0 = no limit); more get 429",
    ),
    ("--slow-seconds", "slow_seconds", float, "default delay of the 'slow' fault (5)"),
    ("--th-quota", "th_quota_limit", int, "talking-head quota limit per account (100)"),
    ("--th-queue-seconds", "th_queue_seconds", float, "talking-head time in queue (20)"),
    (
        "--th-processing-seconds",
        "th_processing_seconds",
        float,
        "talking-head processing time (60)",
    ),
)


def add_cli_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the simulator's options (not `--listen`, which belongs to the command).

    Every option defaults to None, so only given flags override `--sim-config` or defaults.
    Destinations are prefixed `sim_` to stay clear of the exporter's own options.
    """
    group = parser.add_argument_group("simulator")
    group.add_argument(
        "--sim-config",
        dest="sim_config",
        metavar="FILE",
        help="YAML file of simulator options (flags below override it)",
    )
    group.add_argument(
        "--accounts",
        dest="sim_accounts",
        metavar="N|NAMES",
        help="number of accounts, or comma-separated names (default demo-media,demo-shop)",
    )
    group.add_argument(
        "--dvr-hosts",
        dest="sim_dvr_hosts",
        metavar="HOSTS",
        help="comma-separated DVR node names (default dvr-msk-1,dvr-msk-2,dvr-spb-1)",
    )
    group.add_argument(
        "--quirk",
        dest="sim_quirks",
        action="append",
        metavar="NAME",
        choices=sorted(QUIRKS),
        help="imitate one real-platform shape (repeatable): " + ", ".join(sorted(QUIRKS)),
    )
    for flag, field, kind, text in _OPTIONS:
        extra: dict[str, Any] = {}
        if field == "request_time_format":
            extra["choices"] = ("flat", "nested")
        group.add_argument(flag, dest=f"sim_{field}", type=kind, help=text, **extra)


def config_from_args(args: argparse.Namespace) -> SimConfig:
    """The SimConfig for parsed arguments: defaults, then `--sim-config`, then flags."""
    path = getattr(args, "sim_config", None)
    config = SimConfig.from_yaml(path) if path else SimConfig()
    changes: dict[str, Any] = {}
    accounts = getattr(args, "sim_accounts", None)
    if accounts:
        if accounts.isdigit():
            changes["accounts"] = account_names(int(accounts))
        else:
            changes["accounts"] = tuple(a.strip() for a in accounts.split(",") if a.strip())
    hosts = getattr(args, "sim_dvr_hosts", None)
    if hosts:
        changes["dvr_hosts"] = tuple(h.strip() for h in hosts.split(",") if h.strip())
    quirks = getattr(args, "sim_quirks", None)
    if quirks:
        changes["quirks"] = config.quirks | frozenset(quirks)
    for _flag, field, _kind, _text in _OPTIONS:
        value = getattr(args, f"sim_{field}", None)
        if value is not None:
            changes[field] = value
    return config.replace(**changes) if changes else config
