"""`/_sim/...`: the control surface for tests and demos (JSON, no upstream token needed)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aiohttp import web

from exporter.simulator.http_common import BadJson, json_body
from exporter.simulator.quirks import QUIRKS
from exporter.simulator.routes_traffic import BadQuery, parse_minute
from exporter.support.clock import FakeClock

if TYPE_CHECKING:
    from exporter.simulator.simulator import Simulator


def _bad(message: str, status: int = 400) -> web.Response:
    return web.json_response({"error": message}, status=status)


async def _object(request: web.Request) -> dict[str, Any]:
    body = await json_body(request, optional=True)
    if body is None:
        return {}
    if not isinstance(body, dict):
        raise BadJson("Request body must be a JSON object")
    return body


class ControlRoutes:
    """Faults, forced restream codes, DVR node switches, token expiry, request log, truth."""

    def __init__(self, sim: Simulator) -> None:
        self.sim = sim

    def routes(self) -> list[web.RouteDef]:
        force = "/_sim/restream/{account}/{resource_id}/force"
        return [
            web.get("/", self.index),
            web.get("/_sim/", self.summary),
            web.get("/_sim/faults", self.list_faults),
            web.post("/_sim/faults", self.set_fault),
            web.delete("/_sim/faults", self.clear_faults),
            web.get("/_sim/auth", self.auth_info),
            web.post("/_sim/auth/expire", self.expire_tokens),
            web.post("/_sim/auth/reset", self.reset_auth),
            web.post(force, self.force_status),
            web.delete(force, self.clear_status),
            web.get("/_sim/dvr/nodes", self.list_nodes),
            web.post("/_sim/dvr/nodes/{host}", self.set_node),
            web.get("/_sim/requests", self.list_requests),
            web.delete("/_sim/requests", self.clear_requests),
            web.get("/_sim/traffic", self.traffic_truth),
            web.get("/_sim/clock", self.get_clock),
            web.post("/_sim/clock", self.move_clock),
            web.post("/_sim/reset", self.reset),
            web.get("/_sim/quirks", self.list_quirks),
            web.post("/_sim/quirks", self.set_quirks),
        ]

    async def index(self, request: web.Request) -> web.Response:
        """What a person opening the simulator's address sees."""
        return web.json_response(
            {
                "service": "cdnvideo-exporter platform simulator",
                "accounts": list(self.sim.accounts),
                "upstream_header": "CDN-AUTH-TOKEN",
                "api": [
                    "/app/metrics/v1/",
                    "/app/metrics/v1/resources",
                    "/app/restream/v2/{account}/resources",
                    "/app/dvr-net/v1/{account}/streams/{stream_name}",
                    "/app/th-api/v1/accounts/{account}/configurations",
                    "/app/oauth/v1/token/",
                    "/app/inventory/v1/accounts/",
                ],
                "control": "/_sim/",
            }
        )

    async def summary(self, request: web.Request) -> web.Response:
        return web.json_response(self.sim.describe())

    async def list_faults(self, request: web.Request) -> web.Response:
        return web.json_response([f.to_json() for f in self.sim.faults.active()])

    async def set_fault(self, request: web.Request) -> web.Response:
        try:
            body = await _object(request)
            made = self.sim.faults.set(
                str(body.get("area", "")),
                str(body.get("kind", "")),
                body.get("count"),
                delay=body.get("delay"),
                match=body.get("match"),
                body=body.get("body"),
            )
        except (BadJson, ValueError, TypeError) as exc:
            return _bad(str(exc))
        return web.json_response([f.to_json() for f in made])

    async def clear_faults(self, request: web.Request) -> web.Response:
        self.sim.faults.clear(request.query.get("area"))
        return web.json_response([f.to_json() for f in self.sim.faults.active()])

    async def auth_info(self, request: web.Request) -> web.Response:
        return web.json_response(self.sim.describe()["auth"])

    async def expire_tokens(self, request: web.Request) -> web.Response:
        try:
            body = await _object(request)
        except BadJson as exc:
            return _bad(str(exc))
        self.sim.auth.expire_all(include_static=bool(body.get("include_static", False)))
        return web.json_response(self.sim.describe()["auth"])

    async def reset_auth(self, request: web.Request) -> web.Response:
        self.sim.auth.reset()
        return web.json_response(self.sim.describe()["auth"])

    async def force_status(self, request: web.Request) -> web.Response:
        m = request.match_info
        try:
            body = await _object(request)
            code = body.get("code")
            if isinstance(code, bool) or not isinstance(code, int):
                return _bad("'code' must be an integer")
            if not isinstance(body.get("target_url"), str):
                return _bad("'target_url' is required")
            self.sim.force_restream_status(
                m["account"], m["resource_id"], body["target_url"], code, body.get("description")
            )
        except BadJson as exc:
            return _bad(str(exc))
        except KeyError as exc:
            return _bad(f"not found: {exc}", 404)
        return web.json_response({"forced": True, "code": code})

    async def clear_status(self, request: web.Request) -> web.Response:
        m = request.match_info
        self.sim.clear_restream_status(
            m["account"], m["resource_id"], request.query.get("target_url")
        )
        return web.json_response({"forced": False})

    async def list_nodes(self, request: web.Request) -> web.Response:
        return web.json_response([n.to_json() for n in self.sim.dvr.nodes.values()])

    async def set_node(self, request: web.Request) -> web.Response:
        host = request.match_info["host"]
        if host not in self.sim.dvr.nodes:
            return _bad(f"unknown host {host}", 404)
        try:
            body = await _object(request)
        except BadJson as exc:
            return _bad(str(exc))
        switches = {k: body[k] for k in ("alive", "failing", "hidden") if k in body}
        if not all(isinstance(v, bool) for v in switches.values()):
            return _bad("alive, failing and hidden must be booleans")
        node = self.sim.dvr.set_node(host, **switches)
        return web.json_response(node.to_json())

    async def list_requests(self, request: web.Request) -> web.Response:
        q = request.query
        found = self.sim.requests.find(
            method=q.get("method"), area=q.get("area"), path_prefix=q.get("path_prefix")
        )
        return web.json_response([r.to_json() for r in found])

    async def clear_requests(self, request: web.Request) -> web.Response:
        self.sim.requests.clear()
        return web.json_response([])

    async def traffic_truth(self, request: web.Request) -> web.Response:
        q = request.query
        account, minute = q.get("account", ""), q.get("minute", "")
        if account not in self.sim.accounts:
            return _bad(f"unknown account {account!r}", 404)
        try:
            start = int(minute) if minute.isdigit() else parse_minute("minute", minute)
            return web.json_response(self.sim.traffic_truth(account, start, q.get("resource")))
        except (BadQuery, ValueError, KeyError) as exc:
            return _bad(str(exc))

    async def get_clock(self, request: web.Request) -> web.Response:
        return web.json_response(
            {"now": self.sim.clock.time(), "fake": isinstance(self.sim.clock, FakeClock)}
        )

    async def move_clock(self, request: web.Request) -> web.Response:
        clock = self.sim.clock
        if not isinstance(clock, FakeClock):
            return _bad("the simulator runs on the real clock", 409)
        try:
            body = await _object(request)
            if "set" in body:
                clock.set(float(body["set"]))
            else:
                clock.advance(float(body.get("advance", 0)))
        except (BadJson, ValueError, TypeError) as exc:
            return _bad(str(exc))
        return web.json_response({"now": clock.time(), "fake": True})

    async def list_quirks(self, request: web.Request) -> web.Response:
        """Every known quirk, what it does, and whether it is on."""
        return web.json_response(
            [
                {"name": name, "on": name in self.sim.quirks, "effect": effect}
                for name, effect in QUIRKS.items()
            ]
        )

    async def set_quirks(self, request: web.Request) -> web.Response:
        """`{"quirks": [NAME, ...]}` switches exactly those on."""
        try:
            body = await _object(request)
            names = body.get("quirks")
            if not isinstance(names, list):
                raise ValueError("quirks: expected a list of quirk names")
            self.sim.set_quirks(names)
        except (BadJson, ValueError) as exc:
            return _bad(str(exc))
        return await self.list_quirks(request)

    async def reset(self, request: web.Request) -> web.Response:
        self.sim.reset()
        return web.json_response(self.sim.describe())
