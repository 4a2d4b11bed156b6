"""The traffic area's settings section (``traffic``), its request cost and the rules and notes
that involve other sections (the request budget of ``upstream``)."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any

from exporter.config import AreaSection, ConfigError, Settings, field_doc
from exporter.config import rules as r
from exporter.traffic.windows import MAX_WINDOW_MINUTES, settle_window_minutes

RESOURCE_STATUS_CODES = ("codes", "classes")  # traffic.resource_status_codes


def check_schedule(key: str, r: int | tuple[int, ...], _: Any) -> None:
    if isinstance(r, int):
        if not 0 <= r <= 10:
            raise ConfigError(f"{key}: must be 0-10 (a re-read fits one 10-minute window), got {r}")
        return
    if not r:
        raise ConfigError(f"{key}: the list is empty; use 0 to turn settling off")
    if not 1 <= r[0] <= 10:
        raise ConfigError(
            f"{key}[0]: the first age must be 1-10 (its runs are read as one "
            f"window of up to 10 minutes), got {r[0]}"
        )
    for i, (a, b) in enumerate(itertools.pairwise(r), 1):
        if b <= a:
            raise ConfigError(f"{key}[{i}]: ages must rise, got {b} after {a}")
    if r[-1] > 1440:
        raise ConfigError(f"{key}[{len(r) - 1}]: at most 1440 (a day), got {r[-1]}")


@dataclass(frozen=True)
class TrafficSettings:
    enabled: bool = field(
        default=True, metadata=field_doc("Poll `/app/metrics/v1/` (and `/resources`).")
    )
    delay_seconds: int = field(
        default=120,
        metadata=field_doc(
            "Read a minute this long after it closes; the platform's figures keep rising for "
            "a while.",
            rule=r.at_least(0, ">= 0; below 60 check-config warns"),
        ),
    )
    revisit_minutes: int | tuple[int, ...] = field(
        default=5,
        metadata=field_doc(
            "Settle reads: re-read recent minutes this long after their first read and add "
            "only late increases, so each counter counts every request exactly once. A list "
            "such as `[5, 15, 60]` re-reads them at each of these ages (later ages join "
            "runs into windows of up to 10 minutes, within a tolerance); `0` turns settling "
            "off. See docs/windowing.md.",
            rule=r.custom(
                "0-10, or a list of rising ages 1-1440 (the first at most 10)", check_schedule
            ),
        ),
    )
    catch_up_minutes: int = field(
        default=60,
        metadata=field_doc(
            "Longest gap backfilled after an outage or restart; older minutes are counted "
            'as `cdnvideo_traffic_windows_total{outcome="missed"}`.',
            rule=r.at_least(0),
        ),
    )
    per_resource: bool = field(
        default=True, metadata=field_doc("Also export the `cdnvideo_resource_*` series.")
    )
    resources_include: str = field(
        default=".*",
        metadata=field_doc(
            "Regular expression a resource id or name must match to be exported.",
            rule=r.regex(),
        ),
    )
    resources_exclude: str = field(
        default="",
        metadata=field_doc(
            "Regular expression that drops matching resources (empty: none).",
            rule=r.regex(),
        ),
    )
    resource_status_codes: str = field(
        default="codes",
        metadata=field_doc(
            "Per-resource status detail: `codes`, the specific codes (200 ... 505, 36 series "
            "per family) in `cdnvideo_resource_responses_*{code}` and the classes in "
            "`cdnvideo_resource_responses_by_class_*{class}`; `classes`, the class families "
            "only (`2xx` ... `5xx`, each the platform's count for the whole class; 8 series "
            "per family). Account families keep every code and class.",
            rule=r.one_of(*RESOURCE_STATUS_CODES),
        ),
    )
    resource_request_times: bool = field(
        default=True,
        metadata=field_doc(
            "Export `cdnvideo_resource_response_time_median_seconds` (16 series a resource); "
            "`false` leaves it out. The account family stays."
        ),
    )
    max_resources: int = field(
        default=0,
        metadata=field_doc(
            "0: no cap. N: the top N resources by edge traffic, the rest summed as "
            '`resource="__other__"`.',
            rule=r.at_least(0),
        ),
    )
    state_file: str = field(
        default="",
        metadata=field_doc(
            "File where the accounted-minute cursor survives restarts (empty: kept in "
            "memory only, so a restart starts the counters afresh at the newest minute). "
            "`run` makes its missing directories (mode 0750) and writes a probe file there "
            "before it starts; a path it cannot write is an error of `check-config` and "
            "`run` exits 1 naming it. A volume that fails later holds new counters back "
            "(`cdnvideo_state_save_failures_total`, alert `CdnvideoStateSaveFailing`). "
            "Files kept beside it: `<state_file>.cursors.json`, `<state_file>.charts.json`, "
            "the audit record `<state_file>.audit/` (docs/windowing.md, *State file*)."
        ),
    )
    series_retention_hours: float = field(
        default=24.0,
        metadata=field_doc(
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


def cost_per_minute(
    traffic: TrafficSettings, longest: int = MAX_WINDOW_MINUTES, one_minute_runs: bool = False
) -> float:
    """Metrics requests per account per minute in steady state: first reads, and settle reads
    in the windows each age reads (``settle_window_minutes``); ``longest``: the longest window
    the platform answers (1 for a platform that answers 1-minute windows only); with
    ``one_minute_runs`` (an output of final minutes is on) every settle read is one minute."""
    if not traffic.enabled:
        return 0.0
    per = 2.0 if traffic.per_resource else 1.0
    stages = traffic.settle_stages
    if one_minute_runs:
        longest = 1
    return per + sum(per / settle_window_minutes(a, stages, longest) for a in stages)


def one_minute_runs(settings: Settings) -> bool:
    """Whether ``remote_write`` is on: then the poller keeps every run to one minute, so each
    minute's last settle read is the platform's own figure for it. Read by key, not by type:
    the output builds on this area and this area does not import it."""
    return bool(getattr(settings.areas.get("remote_write"), "url", ""))


def check_budget(key: str, traffic: TrafficSettings, settings: Settings) -> None:
    """A request budget below what the traffic schedule costs would postpone reads for ever."""
    check_schedule(f"{key}.revisit_minutes", traffic.revisit_minutes, traffic)
    budget = settings.upstream.max_requests_per_minute
    cost = cost_per_minute(traffic, one_minute_runs=one_minute_runs(settings))
    if budget and budget < cost:
        stages = list(traffic.settle_stages) or 0
        raise ConfigError(
            f"upstream.max_requests_per_minute: {budget} is below what traffic costs: "
            f"first reads and settle reads at revisit_minutes {stages} take {cost:.2f} "
            f"requests a minute per account; give at least {math.ceil(cost)} (more when "
            "restream, DVR or talking-head share the budget), or 0 for no limit"
        )


def requests_per_minute(settings: Settings) -> float:
    """Metrics requests per account per minute in steady state (``cost_per_minute``)."""
    return cost_per_minute(TRAFFIC_SECTION.of(settings), one_minute_runs=one_minute_runs(settings))


def notes(settings: Settings) -> list[str]:
    """What the settle schedule costs, and how to choose it from what the exporter measures."""
    t = TRAFFIC_SECTION.of(settings)
    if not t.enabled:
        return []
    stages = t.settle_stages
    schedule = ", ".join(f"{a} min" for a in stages) or "off"
    if one_minute_runs(settings):
        schedule += " (one-minute windows: remote_write is on)"
    return [
        f"traffic.revisit_minutes: settle reads at {schedule} cost "
        f"{requests_per_minute(settings):.2f} metrics requests per minute per account, "
        f"{cost_per_minute(t, 1):.2f} on a platform that answers 1-minute windows only "
        "(or refuses longer ones; a budget below that leaves late data uncounted: "
        "cdnvideo_traffic_windows_owed, CdnvideoTrafficSettleBehind); "
        "cdnvideo_traffic_late_share{after_minutes} (and the landing page) shows what each "
        "read adds: add a later age while the last one adds more than 0 "
        "(CdnvideoTrafficSettleTooShort), drop ages that add 0 for days (docs/windowing.md)"
    ]


def warnings(settings: Settings) -> list[str]:
    t = TRAFFIC_SECTION.of(settings)
    if t.delay_seconds < 60:
        return [
            f"traffic.delay_seconds: {t.delay_seconds} s reads minutes before their figures "
            "settle; 120 s or more is recommended"
        ]
    return []


TRAFFIC_SECTION = AreaSection(
    "traffic",
    TrafficSettings,
    "Traffic metrics, read minute by minute.",
    rule=r.custom(
        "with `upstream.max_requests_per_minute` set, that budget must be at least "
        "the requests a minute the traffic schedule costs (check-config prints it)",
        check_budget,
    ),
    notes=notes,
    warnings=warnings,
)
