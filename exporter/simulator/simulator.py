"""Simulator: the whole fake platform's state, its aiohttp app, and the Python control API."""

from __future__ import annotations

from collections.abc import Iterable
from email.utils import formatdate
from typing import Any

from aiohttp import web

from exporter.simulator import churn
from exporter.simulator.auth import AuthState
from exporter.simulator.config import SimConfig
from exporter.simulator.dataset import CdnResource, cdn_resources, dvr_streams, restream_seed
from exporter.simulator.dvr import DvrState
from exporter.simulator.faults import Faults
from exporter.simulator.hashing import hex_id
from exporter.simulator.middleware import upstream_middleware
from exporter.simulator.quirks import QUIRKS, check_quirks
from exporter.simulator.ratelimit import RateLimiter
from exporter.simulator.requests_log import RequestLog
from exporter.simulator.restream import STATUS_TEXT, RestreamState
from exporter.simulator.routes_auth import AuthRoutes
from exporter.simulator.routes_control import ControlRoutes
from exporter.simulator.routes_dvr import DvrRoutes
from exporter.simulator.routes_restream import RestreamRoutes
from exporter.simulator.routes_talking_head import TalkingHeadRoutes
from exporter.simulator.routes_traffic import TrafficRoutes
from exporter.simulator.talking_head import TalkingHeadState
from exporter.simulator.traffic_model import BYTES_PER_BPS_MINUTE, AccountTraffic
from exporter.simulator.traffic_window import (
    COLUMN_KEYS,
    OUTPUT_COLUMNS,
    TrafficReader,
    Value,
    WindowSum,
    late_fraction,
    rounded,
)
from exporter.support.clock import Clock, SystemClock
from exporter.support.platform_fields import SIDES

# Quirk bogus-date: which metrics replies carry a wrong Date, and how far ahead.
BOGUS_DATE_EVERY = 10
BOGUS_DATE_AHEAD_SECONDS = 3600.0


class ShiftedClock:
    """Another clock's time plus a fixed offset (a platform whose clock is off)."""

    def __init__(self, inner: Clock, offset: float) -> None:
        self.inner = inner
        self.offset = offset

    def time(self) -> float:
        return self.inner.time() + self.offset

    def monotonic(self) -> float:
        return self.inner.monotonic()


class Simulator:
    """The simulated platform. Build one per test; all time comes from `clock`.

    >>> sim = Simulator(SimConfig(), FakeClock())
    >>> sim.faults.set("traffic", "503", count=1)
    >>> sim.force_restream_status("demo-media", "1001", "rtmp://a.rtmp.youtube.com/live2", 11)
    """

    def __init__(self, config: SimConfig | None = None, clock: Clock | None = None) -> None:
        self.config = config = config or SimConfig()
        clock = clock or SystemClock()
        if config.clock_offset_seconds:
            clock = ShiftedClock(clock, config.clock_offset_seconds)
        self.clock = clock
        self.started_at = clock.time()
        self.faults = Faults(config.slow_seconds)
        self.requests = RequestLog(config.request_log_size)
        self.auth = AuthState(config, clock)
        self.rate = RateLimiter(config.api_requests_per_minute)
        self.metrics_replies = 0  # metrics replies sent with quirk bogus-date on
        # Accounts the account list leaves out (their APIs still answer): an inventory reply
        # that misses an account for a while; tests set it.
        self.unlisted: set[str] = set()
        # Resource list changes (quirk resource-churn, or add/rename/delete_resource), in order.
        self.churn_log: list[churn.Change] = []
        self._churned: dict[str, int] = {}  # changes of resource-churn applied, per account
        self._cdn = {
            acc: cdn_resources(i + 1, acc, config.resources_per_account)
            for i, acc in enumerate(config.accounts)
        }
        cache_minutes = max(16, min(4096, 400_000 // max(1, config.resources_per_account)))
        self._traffic = {
            acc: TrafficReader(
                AccountTraffic(config.seed, acc, res, cache_minutes),
                config.late_seconds,
                cache_minutes,
                config.late_half_seconds,
            )
            for acc, res in self._cdn.items()
        }
        self.restream = RestreamState(
            config.seed,
            clock,
            {
                acc: restream_seed(
                    i + 1, acc, config.restreams_per_account, self.started_at, config.seed
                )
                for i, acc in enumerate(config.accounts)
            },
        )
        self.dvr = DvrState(
            config.seed,
            clock,
            {acc: dvr_streams(acc, config) for acc in config.accounts},
            config.dvr_hosts,
        )
        self.talking_head = TalkingHeadState(config, clock)
        # Real-platform shapes switched on; starts from the config, tests may change it.
        self.quirks: set[str] = set(config.quirks)
        self._app: web.Application | None = None

    # --- identity ----------------------------------------------------------------------------
    @property
    def accounts(self) -> tuple[str, ...]:
        return self.config.accounts

    @property
    def token(self) -> str:
        """The static CDN-AUTH-TOKEN (never expires unless `expire_tokens(include_static=True)`)."""
        return self.config.token

    def utoken(self, account: str) -> str:
        return hex_id(self.config.seed, "utoken", account)

    # --- the app -----------------------------------------------------------------------------
    def build_app(self) -> web.Application:
        """A new aiohttp application over this simulator's state (each run needs its own)."""
        app = web.Application(middlewares=[upstream_middleware(self)])
        app[SIM_KEY] = self
        app.on_response_prepare.append(self._date_header)
        for group in (
            TrafficRoutes(self),
            RestreamRoutes(self),
            DvrRoutes(self),
            TalkingHeadRoutes(self),
            AuthRoutes(self),
            ControlRoutes(self),
        ):
            app.add_routes(group.routes())
        return app

    async def _date_header(self, request: web.Request, response: web.StreamResponse) -> None:
        """Every reply's `Date` is the simulated platform's clock (as a real server's is);
        with quirk bogus-date every 10th metrics reply's is an hour ahead."""
        now = self.clock.time()
        if request.path.startswith("/app/metrics/") and self.has_quirk("bogus-date"):
            self.metrics_replies += 1
            if self.metrics_replies % BOGUS_DATE_EVERY == 0:
                now += BOGUS_DATE_AHEAD_SECONDS
        response.headers["Date"] = formatdate(now, usegmt=True)

    @property
    def app(self) -> web.Application:
        """The application, built on first use."""
        if self._app is None:
            self._app = self.build_app()
        return self._app

    # --- traffic truth -----------------------------------------------------------------------
    def resources(self, account: str) -> tuple[CdnResource, ...]:
        """The account's CDN resources (`id`, `name`, `cname`, `kind`)."""
        return self._cdn[account]

    def traffic_reader(self, account: str) -> TrafficReader | None:
        if "resource-churn" in self.quirks and account in self._traffic:
            self._churn(account)
        return self._traffic.get(account)

    # --- resources added, renamed, deleted (quirk resource-churn, or called by tests) ---------
    def add_resource(self, account: str, at: int | None = None) -> CdnResource:
        """A new resource of ``account`` with traffic from minute boundary ``at`` (default:
        the next one)."""
        reader = self._traffic[account]
        n = len(reader.traffic.resources) + 1
        res = cdn_resources(self.config.accounts.index(account) + 1, account, n)[-1]
        start = churn.boundary(self.clock.time()) if at is None else at
        reader.traffic.add(res, start)
        reader.churned()
        self._cdn[account] = reader.traffic.resources
        self.churn_log.append(churn.Change(start, account, "add", res.id, res.name))
        return res

    def delete_resource(self, account: str, resource_id: str, at: int | None = None) -> None:
        """``resource_id`` has no traffic from minute boundary ``at`` (default: the next one)
        and is left out of replies that hold none of its minutes."""
        reader = self._traffic[account]
        end = churn.boundary(self.clock.time()) if at is None else at
        reader.traffic.delete(resource_id, end)
        reader.churned()
        self.churn_log.append(churn.Change(end, account, "delete", resource_id))

    def rename_resource(self, account: str, resource_id: str, name: str) -> None:
        """``resource_id`` is named ``name`` in every reply from now on (id and cname kept)."""
        reader = self._traffic[account]
        reader.traffic.rename(resource_id, name)
        self._cdn[account] = reader.traffic.resources
        now = churn.boundary(self.clock.time())
        self.churn_log.append(churn.Change(now, account, "rename", resource_id, name))

    def _churn(self, account: str) -> None:
        """Apply the changes of quirk resource-churn due by now, each at its own time."""
        done = self._churned.get(account, 0)
        for k in range(done + 1, churn.due(self.started_at, self.clock.time()) + 1):
            at = churn.boundary(self.started_at + k * churn.CHURN_SECONDS)
            traffic = self._traffic[account].traffic
            alive = [r.id for i, r in enumerate(traffic.resources) if traffic.spans[i][1] > at]
            kind, rid = churn.draw(self.config.seed, account, k, alive)
            if kind == "add":
                self.add_resource(account, at)
            elif kind == "delete":
                self.delete_resource(account, rid, at)
            else:
                name = f"{traffic.resources[traffic.index[rid]].name.split('~')[0]}~{k}"
                self.rename_resource(account, rid, name)
                self.churn_log[-1] = churn.Change(at, account, "rename", rid, name)
            self._churned[account] = k

    def traffic_final(
        self, account: str, minute_start: int, resource: str | None = None
    ) -> dict[str, float]:
        """FINAL figures of one minute, flat keys (`edge_request_time_0_250k`) whatever the
        reply format: one resource's, or the account totals (sum over resources) when None.
        Counts are ints, exactly as the API returns them once the minute is final."""
        if minute_start % 60:
            raise ValueError("minute_start must be a whole minute (Unix seconds % 60 == 0)")
        reader = self._traffic[account]
        if resource is None:
            row = reader.total_row(minute_start)
        else:
            row = reader.traffic.rows(minute_start)[reader.traffic.index[resource]]
        one = WindowSum(1)
        one.add(row)
        return self._flat(one.values())

    def traffic_truth(
        self, account: str, minute_start: int, resource: str | None = None
    ) -> dict[str, float]:
        """``traffic_final`` and what it implies but the API does not send: the bytes each side
        delivered in the minute (``edge_transferred_bytes``, ``origin_transferred_bytes``:
        bandwidth x 60 / 8, whole bytes, as the model draws them)."""
        final = self.traffic_final(account, minute_start, resource)
        for side in SIDES:
            final[f"{side}_transferred_bytes"] = final[f"{side}_bandwidth"] * BYTES_PER_BPS_MINUTE
        return final

    def traffic_window(
        self,
        account: str,
        start: int,
        end: int,
        resource: str | None = None,
        now: float | None = None,
    ) -> dict[str, float]:
        """The totals endpoint's figures for [start, end) at `now` (default: now), flat keys."""
        reader = self._traffic[account]
        at = self.clock.time() if now is None else now
        minutes = (end - start) // 60
        return self._flat(reader.totals(start, minutes, at, [resource] if resource else None))

    def late_fraction(self, minute_start: int, now: float | None = None) -> float:
        """Share of a minute's final counts visible at `now` (0 before it, 1 when final)."""
        at = self.clock.time() if now is None else now
        return late_fraction(
            minute_start, at, self.config.late_seconds, self.config.late_half_seconds
        )

    @staticmethod
    def _flat(figures: list[Value]) -> dict[str, float]:
        values = rounded(figures)
        return {COLUMN_KEYS[c]: values[c] for c in OUTPUT_COLUMNS}

    # --- restream control --------------------------------------------------------------------
    def force_restream_status(
        self,
        account: str,
        resource_id: str,
        target_url: str,
        code: int,
        description: str | None = None,
    ) -> None:
        """From now on, report `code` for every target of the resource with this target_url
        (any integer, e.g. 11; description defaults to the known text or "Unknown status")."""
        text = description or STATUS_TEXT.get(code, "Unknown status")
        self.restream.force(account, resource_id, target_url, code, text)

    def clear_restream_status(
        self, account: str, resource_id: str, target_url: str | None = None
    ) -> None:
        """Stop forcing (one target_url, or every target of the resource)."""
        self.restream.clear_force(account, resource_id, target_url)

    # --- misc control ------------------------------------------------------------------------
    def has_quirk(self, name: str) -> bool:
        """Whether the real-platform shape `name` (exporter/simulator/quirks.py) is on."""
        if name not in QUIRKS:
            raise KeyError(f"unknown quirk {name!r}")
        return name in self.quirks

    def set_quirks(self, names: Iterable[str]) -> None:
        """Switch exactly these quirks on (ValueError naming an unknown one)."""
        self.quirks = set(check_quirks(names))

    def expire_tokens(self, include_static: bool = False) -> None:
        self.auth.expire_all(include_static=include_static)

    def reset(self) -> None:
        """Clear faults, the request log, auth lock-out, rate-limit windows, forced restream codes
        and DVR node switches. Data (resources, deletions, tasks, issued tokens) stays."""
        self.faults.clear()
        self.restream.clear_all_forces()
        self.requests.clear()
        self.auth.reset()
        self.rate.reset()
        self.dvr.reset_nodes()

    def describe(self) -> dict[str, Any]:
        """A JSON summary for `/_sim/`."""
        return {
            "now": self.clock.time(),
            "accounts": list(self.accounts),
            "resources_per_account": self.config.resources_per_account,
            "restream_resources": {a: list(t) for a, t in self.restream.resources.items()},
            "dvr_streams": {a: list(s) for a, s in self.dvr.streams.items()},
            "dvr_nodes": [n.to_json() for n in self.dvr.nodes.values()],
            "faults": [f.to_json() for f in self.faults.active()],
            "auth": {
                "failed_logins": self.auth.failed_logins,
                "issued_tokens": self.auth.issued_count,
                "locked_until": self.auth.locked_until,
                "static_expired": self.auth.static_expired,
            },
            "requests_logged": len(self.requests),
            "quirks": sorted(self.quirks),
            "config": {
                "late_seconds": self.config.late_seconds,
                "late_half_seconds": self.config.late_half_seconds,
                "request_time_format": self.config.request_time_format,
                "max_window_minutes": self.config.max_window_minutes,
                "clock_offset_seconds": self.config.clock_offset_seconds,
                "token_lifetime_seconds": self.config.token_lifetime_seconds,
                "api_requests_per_minute": self.config.api_requests_per_minute,
                "rate_limited": self.rate.refused,
                "seed": self.config.seed,
            },
        }


SIM_KEY = web.AppKey("simulator", Simulator)
