"""SimConfig: every knob of the simulator, with the defaults of the documented demo data set."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Literal

import yaml

from exporter.simulator.quirks import check_quirks

DEFAULT_ACCOUNTS = ("demo-media", "demo-shop")
DEFAULT_DVR_HOSTS = ("dvr-msk-1", "dvr-msk-2", "dvr-spb-1")
RequestTimeFormat = Literal["flat", "nested"]


def account_names(count: int) -> tuple[str, ...]:
    """`count` account names: the two demo accounts first, then `demo-03`, `demo-04`, ..."""
    names = list(DEFAULT_ACCOUNTS[:count])
    names += [f"demo-{i:02d}" for i in range(len(names) + 1, count + 1)]
    return tuple(names)


@dataclass(frozen=True)
class SimConfig:
    """Options of the simulated platform. Times are seconds unless the name says otherwise."""

    accounts: tuple[str, ...] = DEFAULT_ACCOUNTS
    # authentication
    token: str = "demo-token"
    username: str = "demo"
    password: str = "demo"
    token_lifetime_seconds: float = 21599.0
    login_max_failures: int = 7
    login_lock_seconds: float = 10800.0
    token_requests_per_minute: int = 20
    # requests a minute per account over the other APIs (0 = no limit); over it: 429
    api_requests_per_minute: int = 0
    # data set scale
    seed: int = 1
    resources_per_account: int = 5
    restreams_per_account: int = 4
    dvr_streams_per_account: int = 2
    dvr_hosts: tuple[str, ...] = DEFAULT_DVR_HOSTS
    dvr_window_seconds: int = 14400
    # traffic metrics
    late_seconds: float = 90.0
    # half of the late part has arrived this long after the close (0 = the default curve)
    late_half_seconds: float = 0.0
    request_time_format: RequestTimeFormat = "flat"
    max_window_minutes: int = 10
    # the platform's clock minus the caller's (the `Date` header and every figure follow it)
    clock_offset_seconds: float = 0.0
    # talking-head
    th_queue_seconds: float = 20.0
    th_processing_seconds: float = 60.0
    th_quota_limit: int = 100
    th_generations_per_minute: int = 10
    th_monthly_requests: int = 1500
    th_status_uppercase: bool = False
    # plumbing
    slow_seconds: float = 5.0
    request_log_size: int = 1000
    # real-platform shapes to imitate (exporter/simulator/quirks.py)
    quirks: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        object.__setattr__(self, "quirks", check_quirks(self.quirks))
        if not self.accounts:
            raise ValueError("accounts: at least one account is needed")
        if len(set(self.accounts)) != len(self.accounts):
            raise ValueError("accounts: names must be unique")
        for name in self.accounts:
            if not name or "/" in name:
                raise ValueError(f"accounts: bad account name {name!r}")
        if self.request_time_format not in ("flat", "nested"):
            raise ValueError("request_time_format: must be 'flat' or 'nested'")
        if not 1 <= self.max_window_minutes <= 1440:
            raise ValueError("max_window_minutes: must be between 1 and 1440")
        if not self.dvr_hosts:
            raise ValueError("dvr_hosts: at least one host is needed")
        for name in (
            "resources_per_account",
            "restreams_per_account",
            "dvr_streams_per_account",
            "request_log_size",
            "th_quota_limit",
            "th_generations_per_minute",
            "th_monthly_requests",
            "login_max_failures",
            "token_requests_per_minute",
            "api_requests_per_minute",
        ):
            if getattr(self, name) < 0:
                raise ValueError(f"{name}: must not be negative")
        for name in (
            "late_seconds",
            "token_lifetime_seconds",
            "th_queue_seconds",
            "th_processing_seconds",
            "slow_seconds",
            "login_lock_seconds",
        ):
            if getattr(self, name) < 0:
                raise ValueError(f"{name}: must not be negative")
        if self.late_half_seconds and not 0 < self.late_half_seconds < self.late_seconds:
            raise ValueError("late_half_seconds: must be 0 or between 0 and late_seconds")
        if self.dvr_window_seconds <= 0:
            raise ValueError("dvr_window_seconds: must be positive")

    def replace(self, **changes: Any) -> SimConfig:
        return dataclasses.replace(self, **changes)

    @classmethod
    def from_mapping(cls, data: dict[str, Any]) -> SimConfig:
        """Build from a flat mapping (the YAML layout); unknown keys are an error."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown simulator option(s): {', '.join(unknown)}")
        values: dict[str, Any] = {}
        for key, value in data.items():
            if key == "accounts" and isinstance(value, int):
                value = account_names(value)
            elif key == "quirks":
                if not isinstance(value, list | tuple):
                    raise ValueError("quirks: expected a list of quirk names")
                value = frozenset(str(v) for v in value)
            elif key in ("accounts", "dvr_hosts"):
                if not isinstance(value, list | tuple):
                    raise ValueError(f"{key}: expected a list")
                value = tuple(str(v) for v in value)
            values[key] = value
        return cls(**values)

    @classmethod
    def from_yaml(cls, path: str | Path) -> SimConfig:
        """Read a small YAML file of options, e.g. `resources_per_account: 1000`."""
        loaded = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
        if loaded is None:
            return cls()
        if not isinstance(loaded, dict):
            raise ValueError(f"{path}: expected a mapping of simulator options")
        if isinstance(loaded.get("simulator"), dict) and len(loaded) == 1:
            loaded = loaded["simulator"]
        return cls.from_mapping(loaded)
