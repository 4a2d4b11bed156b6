"""`/app/metrics/v1/` and `/app/metrics/v1/resources`: validation, then the window reply."""

from __future__ import annotations

import calendar
import math
import re
import time
from typing import TYPE_CHECKING

from aiohttp import web

from exporter.simulator.http_common import error
from exporter.simulator.revision import revise, revised_minutes
from exporter.simulator.traffic_window import (
    UnknownMetric,
    metric_names,
    render,
    rounded,
    select_columns,
)

if TYPE_CHECKING:
    from exporter.simulator.simulator import Simulator

_TIME = re.compile(r"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}):(\d{2})Z?$")
MINUTE_PRECISION = "Invalid time format. Time must be at minute precision"


class BadQuery(ValueError):
    """422 with this description."""


def parse_minute(name: str, value: str) -> int:
    """`YYYY-MM-DDThh:mm:00` (a trailing Z is tolerated) -> Unix seconds."""
    m = _TIME.match(value)
    if m is None:
        raise BadQuery(f"Invalid time format in '{name}'. Expected YYYY-MM-DDThh:mm:00")
    if m.group(2) != "00":
        raise BadQuery(MINUTE_PRECISION)
    try:
        return calendar.timegm(time.strptime(m.group(1), "%Y-%m-%dT%H:%M"))
    except ValueError:
        raise BadQuery(f"Invalid time format in '{name}'. Expected YYYY-MM-DDThh:mm:00") from None


def format_minute(ts: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:00", time.gmtime(ts))


class TrafficRoutes:
    """Handlers of the metrics area."""

    def __init__(self, sim: Simulator) -> None:
        self.sim = sim

    def routes(self) -> list[web.RouteDef]:
        return [
            web.get("/app/metrics/v1/", self.totals),
            web.get("/app/metrics/v1", self.totals),
            web.get("/app/metrics/v1/resources", self.per_resource),
            web.get("/app/metrics/v1/resources/", self.per_resource),
        ]

    async def totals(self, request: web.Request) -> web.Response:
        return self._reply(request, per_resource=False)

    async def per_resource(self, request: web.Request) -> web.Response:
        return self._reply(request, per_resource=True)

    def _reply(self, request: web.Request, per_resource: bool) -> web.Response:
        q = request.query
        try:
            for name in ("account", "start", "end"):
                if not q.get(name):
                    raise BadQuery(f"Missing required parameter: {name}")
            start = parse_minute("start", q["start"])
            end = parse_minute("end", q["end"])
            limit = self.sim.config.max_window_minutes
            minutes = (end - start) // 60
            if not 1 <= minutes <= limit:
                span = "1 minute" if limit == 1 else f"between 1 and {limit} minutes"
                raise BadQuery(f"Period between start and end must be {span}")
            wanted = [m for v in q.getall("metric", []) for m in v.split(",") if m]
            try:
                columns = select_columns(wanted)
            except UnknownMetric as exc:
                raise BadQuery(f"Unknown metric: {exc}") from None
        except BadQuery as exc:
            return error("traffic", 422, str(exc))
        account = q["account"]
        reader = self.sim.traffic_reader(account)
        if reader is None:
            return error("traffic", 403, "Invalid token or no access")
        if minutes > 2 and self.sim.has_quirk("slow-long-windows"):
            return error("traffic", 504, "Request execution timeout exceeded")
        if minutes > 1 and self.sim.has_quirk("one-minute-window"):
            start, minutes = end - 60, 1
        resources = [r for v in q.getall("resource", []) for r in v.split(",") if r] or None
        strings = self.sim.has_quirk("string-values")
        nested = strings or self.sim.config.request_time_format == "nested"
        now = self.sim.clock.time()
        # quirk revise-after-settle: the account's first resource gains the late requests
        first = reader.traffic.resources[0].id if reader.traffic.resources else ""
        revised = 0
        if self.sim.has_quirk("revise-after-settle") and (resources is None or first in resources):
            revised = revised_minutes(start, minutes, now)
        if per_resource:
            data = [
                {
                    "cname": res.cname,
                    "resource": res.id,
                    "resource_name": res.name,
                    **render(
                        rounded(revise(values, revised if res.id == first else 0)), columns, nested
                    ),
                }
                for res, values in reader.per_resource(
                    start, minutes, now, resources, self.sim.has_quirk("drop-deleted-resources")
                )
            ]
        else:
            values = revise(reader.totals(start, minutes, now, resources), revised)
            data = [render(rounded(values), columns, nested)]
        if strings:
            data = [string_medians(row) for row in data]
        if per_resource and data and self.sim.has_quirk("bad-values"):
            data[-1] = bad_gauges(data[-1])
        body: dict[str, object] = {
            "start": format_minute(start),
            "end": format_minute(end),
            "account": account,
            "metrics": metric_names(columns, nested),
            "data": data,
        }
        if self.sim.has_quirk("status-key"):
            body = {"status": 200, **body}
        return web.json_response(body)


def string_medians(row: dict[str, object]) -> dict[str, object]:
    """Quirk string-values: nested request times as numeric strings, upper-case M."""
    out = dict(row)
    for family in ("edge_request_time", "origin_request_time"):
        ranges = out.get(family)
        if isinstance(ranges, dict):
            out[family] = {rng.replace("m", "M"): str(v) for rng, v in ranges.items()}
    return out


def bad_gauges(row: dict[str, object]) -> dict[str, object]:
    """Quirk bad-values: unreadable hit ratio, bandwidth and one median; counts untouched."""
    out = dict(row)
    if "edge_hit_ratio" in out:
        out["edge_hit_ratio"] = math.nan
    if "edge_bandwidth" in out:
        out["edge_bandwidth"] = "n/a"
    ranges = out.get("edge_request_time")
    if isinstance(ranges, dict) and "0_250k" in ranges:
        out["edge_request_time"] = {**ranges, "0_250k": {"value": ranges["0_250k"]}}
    elif "edge_request_time_0_250k" in out:
        out["edge_request_time_0_250k"] = {"value": out["edge_request_time_0_250k"]}
    return out
