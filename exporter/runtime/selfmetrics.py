"""The exporter's own health metrics, in a private prometheus-client registry."""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    disable_created_metrics,
)

from exporter.runtime.registry import area_names
from exporter.runtime.selftext import TextRenderer
from exporter.support.buildinfo import build_info
from exporter.support.clock import Clock

WINDOW_OUTCOMES = (
    "read",
    "backfilled",
    "revised",
    "missed",
    "mismatched",
    "given_up",
    "released",
)


class SelfMetrics:
    """Every self-metric family, registered in its own registry (no global state).

    Exposition example::

        cdnvideo_up{account="demo-media",area="traffic"} 1.0
        cdnvideo_upstream_requests_total{area="traffic",code="200"} 42.0
    """

    def __init__(self, process: bool = True) -> None:
        # ``_created`` samples only add series; Prometheus handles counter resets without them.
        # (process-wide and idempotent; prometheus-client ships it without annotations)
        disable_created_metrics()  # type: ignore[no-untyped-call]
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.up = Gauge(
            "cdnvideo_up",
            "1 when the last poll of this area and account succeeded, 0 when it failed.",
            ["account", "area"],
            registry=r,
        )
        self.last_success = Gauge(
            "cdnvideo_last_success_timestamp_seconds",
            "Unix time of the last successful poll of this area and account.",
            ["account", "area"],
            registry=r,
        )
        self.next_poll = Gauge(
            "cdnvideo_next_poll_timestamp_seconds",
            "Unix time the next poll of this area and account is due: its next interval, or "
            "sooner, the retry of a failed poll (30 s after it, doubling after each failure).",
            ["account", "area"],
            registry=r,
        )
        self.poll_duration = Histogram(
            "cdnvideo_poll_duration_seconds",
            "Wall time of one poll of an area for one account.",
            ["area"],
            buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
            registry=r,
        )
        self.upstream_requests = Counter(
            "cdnvideo_upstream_requests",
            "Requests sent to the platform API, by area and HTTP status "
            "(timeout, connection_error, or invalid_body / error_body for a 2xx reply that is "
            "not JSON or carries an error).",
            ["area", "code"],
            registry=r,
        )
        self.upstream_duration = Histogram(
            "cdnvideo_upstream_request_duration_seconds",
            "Latency of requests to the platform API.",
            ["area"],
            buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
            registry=r,
        )
        self.rate_limited = Counter(
            "cdnvideo_upstream_rate_limited",
            "Replies of the platform saying slow down (HTTP 429, a 420 or a 200 body about a "
            "rate limit); each pauses the account and lowers its allowance for a while.",
            ["area"],
            registry=r,
        )
        self.polls_postponed = Counter(
            "cdnvideo_upstream_polls_postponed",
            "Polls not run (or cut short) because the account's request budget was spent or it "
            "was backing off after a rate limit; they run again at their next interval.",
            ["area"],
            registry=r,
        )
        self.budget_in_use = Gauge(
            "cdnvideo_upstream_budget_requests_per_minute",
            "Requests sent to the platform for this account in the last 60 seconds "
            "(the request budget in use).",
            ["account"],
            registry=r,
        )
        self.budget_limit = Gauge(
            "cdnvideo_upstream_budget_limit_per_minute",
            "Requests a minute this account may send: upstream.max_requests_per_minute, lower "
            "while recovering from a rate limit (during the pause itself: what it resumes at); "
            "0 = no limit, as in the config.",
            ["account"],
            registry=r,
        )
        self.traffic_windows = Counter(
            "cdnvideo_traffic_windows",
            "Traffic windows by outcome: read (first read), backfilled (after a gap), "
            "revised (a re-read found late increases), missed (older than catch_up_minutes), "
            "mismatched (the reply covered another window than asked; minutes asked for), "
            "given_up (minutes whose settle read kept failing, or that a state file ignored "
            "as a whole owed one; their late data is not counted), "
            "released (minutes owed a settle read when the account moved to another shard; "
            "their late data is not counted).",
            ["account", "outcome"],
            registry=r,
        )
        self.values_rejected = Counter(
            "cdnvideo_upstream_values_rejected",
            "Values the platform sent that could not be read (NaN, text, wrong type) and were "
            "dropped alone; field is the metric key (a gauge: bandwidth, hit ratio, a median).",
            ["area", "field"],
            registry=r,
        )
        self.state_save_failures = Counter(
            "cdnvideo_state_save_failures",
            "Failed writes of the traffic state file (traffic.state_file); while saves fail, "
            "new traffic counters are held back.",
            registry=r,
        )
        self.state_entries_rejected = Counter(
            "cdnvideo_state_entries_rejected",
            "Entries of the traffic state file left out when it was loaded (an account, a "
            "series, an unsettled run with a bad value); they start afresh, the rest is restored.",
            registry=r,
        )
        self.state_last_save = Gauge(
            "cdnvideo_state_last_save_timestamp_seconds",
            "Unix time of the last successful write of the traffic state file (0 = none yet).",
            registry=r,
        )
        self.remote_write_samples = Counter(
            "cdnvideo_remote_write_samples",
            "True-time samples (remote_write) by outcome: sent (acknowledged), rejected (a "
            "400 for the series: never retried), too_old (past max_age_minutes or the "
            "receiver's window: dropped), retried (a request to be sent again).",
            ["outcome"],
            registry=r,
        )
        self.remote_write_pending = Gauge(
            "cdnvideo_remote_write_pending_minutes",
            "Final minutes of this account waiting to be written by remote_write.",
            ["account"],
            registry=r,
        )
        self.remote_write_oldest_age = Gauge(
            "cdnvideo_remote_write_oldest_pending_minute_age_seconds",
            "Seconds since the start of the oldest final minute of this account still waiting "
            "to be written by remote_write (0: none pending); a pending minute older than "
            "remote_write.max_age_minutes is dropped. Updated at least every 15 s.",
            ["account"],
            registry=r,
        )
        self.remote_write_last_minute = Gauge(
            "cdnvideo_remote_write_last_minute_timestamp_seconds",
            "Start of the newest minute of this account the remote_write receiver "
            "acknowledged (its samples' timestamp).",
            ["account"],
            registry=r,
        )
        self.clock_skew = Gauge(
            "cdnvideo_upstream_clock_skew_seconds",
            "The platform's clock minus the exporter's, from the Date header of metrics replies "
            "(within about a second, the latest reply); traffic windows wait for the platform's "
            "clock once 3 consecutive replies agree that it is behind by more than 5 s.",
            registry=r,
        )
        self.clock_readings_rejected = Counter(
            "cdnvideo_upstream_clock_readings_rejected",
            "Date headers of metrics replies whose clock disagreed with the one believed and "
            "with the replies around them (a single outlier); they move no traffic window.",
            registry=r,
        )
        self.traffic_lag = Gauge(
            "cdnvideo_traffic_lag_seconds",
            "Seconds between now and the end of the last accounted traffic minute.",
            ["account"],
            registry=r,
        )
        self.traffic_windows_owed = Gauge(
            "cdnvideo_traffic_windows_owed",
            "Traffic minutes whose settle read is due and not yet done (a request budget, "
            "the platform's rate limit or failing polls hold it back; set by every poll, "
            "failed ones included); growing: late data is not counted.",
            ["account"],
            registry=r,
        )
        self.traffic_settle_overdue = Gauge(
            "cdnvideo_traffic_settle_overdue_seconds",
            "How long the most overdue settle read of the account has waited past its age "
            "(0: none owed).",
            ["account"],
            registry=r,
        )
        self.series_dropped = Counter(
            "cdnvideo_series_dropped",
            'Resources newly folded into resource="__other__" by traffic.max_resources '
            "(counted when one leaves the top N).",
            registry=r,
        )
        build = build_info()
        self.build_info = Gauge(
            "cdnvideo_exporter_build_info",
            "Always 1; the exporter's version, the git revision and branch it was built from "
            "(or runs from, in a git checkout; else unknown) and the Python version it runs on.",
            ["version", "revision", "branch", "pythonversion"],
            registry=r,
        )
        self.build_info.labels(
            build.version, build.revision, build.branch, build.pythonversion
        ).set(1)
        self.reload_successful = Gauge(
            "cdnvideo_exporter_config_last_reload_successful",
            "1 when the last reload of the config file (SIGHUP or POST /-/reload) applied, "
            "0 when the file was refused and the running config kept.",
            registry=r,
        )
        self.reload_success_time = Gauge(
            "cdnvideo_exporter_config_last_reload_success_timestamp_seconds",
            "Unix time the config in force was loaded (start-up or the last good reload).",
            registry=r,
        )
        self.reload_successful.set(1)
        self.web_config_reload_successful = Gauge(
            "cdnvideo_exporter_web_config_last_reload_successful",
            "1 when the last re-read of the web config file (--web.config.file) applied or none "
            "was needed, 0 when a changed file was refused (empty, unparsable, invalid, or "
            "switching TLS or basic auth off) and the config in force kept.",
            registry=r,
        )
        self.web_config_reload_successful.set(1)
        self.http_requests = Counter(
            "cdnvideo_exporter_http_requests",
            "Requests the exporter's own HTTP server answered, by route template (handler; "
            '"unmatched": a path no route matches) and HTTP status, refusals (401, 403, 404, '
            "429) included.",
            ["handler", "code"],
            registry=r,
        )
        self.http_duration = Histogram(
            "cdnvideo_exporter_http_request_duration_seconds",
            "Time the exporter's own HTTP server took to answer a request, by route template.",
            ["handler"],
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
            registry=r,
        )
        if process:  # process_* and python_info, as every prometheus-client exporter has
            ProcessCollector(registry=r)
            PlatformCollector(registry=r)
        self._text = TextRenderer(r)
        self._areas = (*area_names(), "auth")  # the registry's when built
        for area in self._areas:  # exposed at 0 from the start, so the first one is an increase
            self.rate_limited.labels(area)
            self.polls_postponed.labels(area)

    def reload_done(self, clock: Clock) -> Callable[[bool], None]:
        """What a reload reports its outcome to: the two reload gauges."""

        def report(ok: bool) -> None:
            self.reload_successful.set(1 if ok else 0)
            if ok:
                self.reload_success_time.set(clock.time())

        return report

    def render(self) -> bytes:
        """The registry in the text format (``generate_latest``'s bytes)."""
        return self._text.render()

    def start_traffic_account(self, account: str) -> None:
        """Expose every traffic window outcome of ``account`` at 0, so the first missed minute
        is an increase."""
        for outcome in WINDOW_OUTCOMES:
            self.traffic_windows.labels(account, outcome)

    def forget_account(self, account: str) -> None:
        """Remove the series of an account this replica no longer serves."""
        for area in self._areas:
            for gauge in (self.up, self.last_success, self.next_poll):
                with contextlib.suppress(KeyError):
                    gauge.remove(account, area)
        for outcome in WINDOW_OUTCOMES:
            with contextlib.suppress(KeyError):
                self.traffic_windows.remove(account, outcome)
        for gauge in (
            self.traffic_lag,
            self.traffic_windows_owed,
            self.traffic_settle_overdue,
            self.budget_in_use,
            self.budget_limit,
        ):
            with contextlib.suppress(KeyError):
                gauge.remove(account)
