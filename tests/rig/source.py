"""A fake metrics source for poller tests: per-minute truth, late data, failures, call log."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from exporter.traffic import TrafficPoller
from exporter.traffic.reply import Answer
from exporter.upstream.client import minute
from exporter.upstream.errors import UpstreamError

T0 = 1_767_225_600  # 2026-01-01T00:00:00Z
MakePoller = Callable[..., TrafficPoller]

Figures = dict[str, float]


def truth(resource: str, minute: int) -> Figures:
    """Final figures of one resource and minute (deterministic, different per minute)."""
    k = (minute // 60) % 17 + 3 * (int(resource[1:]) if resource[1:].isdigit() else 1)
    req = 100 + 7 * k
    return {
        "edge_requests_total": req,
        "origin_requests_total": req // 4,
        "edge_status_200": req - 6,
        "edge_status_404": 6,
        "edge_status_4xx": 6,
        "origin_status_200": req // 4,
        "edge_hit_bytes": req * 900,
        "edge_bandwidth": req * 1000 * 8 / 60,  # bits/s over the minute
        "edge_hit_ratio": 0.9,
        "edge_request_time_0_250k": 0.02,
    }


COUNTED = (
    "edge_requests_total",
    "origin_requests_total",
    "edge_status_200",
    "edge_status_404",
    "edge_status_4xx",
    "origin_status_200",
    "edge_hit_bytes",
)


@dataclass
class Call:
    account: str
    start: int
    end: int
    per_resource: bool
    ok: bool = False  # answered with data (not failed, not refused)

    @property
    def minutes(self) -> int:
        return (self.end - self.start) // 60


@dataclass
class FakeSource:
    """Answers ``traffic()`` like the platform: counts summed over the window (each minute
    scaled by ``visible(minute, now)`` and floored), bandwidth averaged."""

    clock: Callable[[], float]
    resources: dict[str, tuple[str, str]] = field(
        default_factory=lambda: {
            "r1": ("www", "www.example.com"),
            "r2": ("img", "img.example.com"),
            "r3": ("vod", "vod.example.com"),
        }
    )
    max_minutes: int = 10
    visible: Callable[[int, float], float] = lambda minute, now: 1.0
    fail: UpstreamError | None = None
    fail_per_resource: UpstreamError | None = None
    present: Callable[[str, int], bool] = lambda resource, minute: True
    extra: dict[str, object] = field(default_factory=dict)
    calls: list[Call] = field(default_factory=list)
    one_minute: bool = False  # answer a longer window with its last minute (HTTP 200)
    slow_over: int = 0  # windows longer than this many minutes time out (504); 0 = none
    fail_when: Callable[[int, int], bool] = lambda start, end: False  # 500 for these windows

    async def traffic(
        self,
        account: str,
        start: float,
        end: float,
        per_resource: bool,
        metrics: Sequence[str] = (),
        resource: str | None = None,
    ) -> Answer:
        s, e = int(start), int(end)
        assert s % 60 == 0
        assert e % 60 == 0
        assert e > s
        call = Call(account, s, e, per_resource)
        self.calls.append(call)
        if self.fail is not None:
            raise self.fail
        if per_resource and self.fail_per_resource is not None:
            raise self.fail_per_resource
        if (e - s) // 60 > self.max_minutes:
            raise UpstreamError("traffic", "http", "Invalid period", 422)
        if self.slow_over and (e - s) // 60 > self.slow_over:
            raise UpstreamError("traffic", "http", "Request execution timeout exceeded", 504)
        if self.fail_when(s, e):
            raise UpstreamError("traffic", "http", "Internal Server Error", 500)
        call.ok = True
        now = self.clock()
        if self.one_minute:
            s = e - 60
        echo = {"start": minute(s), "end": minute(e), "account": account}
        if per_resource:
            rows = []
            for rid, (name, cname) in self.resources.items():
                values = self.window(rid, s, e, now)
                if values is not None:
                    ident = {"resource": rid, "resource_name": name, "cname": cname}
                    rows.append({**values, **self.extra, **ident})
            return Answer.of({**echo, "data": rows})
        total: Figures = {}
        for rid in self.resources:
            values = self.window(rid, s, e, now)
            for key, v in (values or {}).items():
                total[key] = total.get(key, 0) + v
        if "edge_hit_ratio" in total:
            total["edge_hit_ratio"] = 0.9
            total["edge_request_time_0_250k"] = 0.02
        return Answer.of({**echo, "data": [{**total, **self.extra}]})

    def window(self, rid: str, s: int, e: int, now: float) -> Figures | None:
        out: Figures = {}
        minutes = range(s, e, 60)
        if not any(self.present(rid, m) for m in minutes):
            return None
        for m in minutes:
            if not self.present(rid, m):
                continue
            f = self.visible(m, now)
            for key, v in truth(rid, m).items():
                if key in COUNTED:
                    out[key] = out.get(key, 0) + int(v * f)
                elif key == "edge_bandwidth":
                    out[key] = out.get(key, 0) + v * f / ((e - s) // 60)
                else:
                    out[key] = v
        return out

    def final(self, key: str, minutes: Sequence[int], resource: str | None = None) -> float:
        """The final truth of a counted key summed over minutes (account or one resource)."""
        rids = [resource] if resource else list(self.resources)
        return sum(
            truth(r, m)[key]
            for r in rids
            for m in minutes
            if key in truth(r, m) and self.present(r, m)
        )
