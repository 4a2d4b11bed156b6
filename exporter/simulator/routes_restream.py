"""`/app/restream/v2/<account>/...`: resources CRUD, status and status history."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aiohttp import web

from exporter.simulator.http_common import BadJson, error, json_body
from exporter.simulator.restream import Resource
from exporter.simulator.restream_validate import BodyError, parse_iso_z, validate_resource

if TYPE_CHECKING:
    from exporter.simulator.simulator import Simulator

BASE = "/app/restream/v2/{account}"
MAX_HISTORY_SECONDS = 31 * 86400


class NotFound(Exception):
    pass


def _name_the_target(target: dict[str, Any]) -> None:
    """Quirk ``url-in-description``: a failing target's description names its URL in clear."""
    status = target["status"]
    if status["code"] != 0:
        url = target["target_url"]
        status["description"] = f"{status['description']}: publish to {url} refused"


class RestreamRoutes:
    """Handlers of the restream area (404 for an unknown client or resource, 400 for bad input)."""

    def __init__(self, sim: Simulator) -> None:
        self.sim = sim
        self.state = sim.restream

    def routes(self) -> list[web.RouteDef]:
        return [
            web.get(f"{BASE}/resources", self.list_resources),
            web.post(f"{BASE}/resources", self.create),
            web.get(f"{BASE}/resources/{{resource_id}}", self.get_resource),
            web.put(f"{BASE}/resources/{{resource_id}}", self.replace),
            web.get(f"{BASE}/status", self.status),
            web.get(f"{BASE}/history", self.history),
        ]

    def _table(self, request: web.Request) -> dict[str, Resource]:
        table = self.state.resources.get(request.match_info["account"])
        if table is None:
            raise NotFound("Client not found")
        return table

    def _resource(self, request: web.Request, rid: str) -> Resource:
        res = self._table(request).get(rid)
        if res is None:
            raise NotFound(f"Resource {rid} not found")
        return res

    async def list_resources(self, request: web.Request) -> web.Response:
        try:
            table = self._table(request)
        except NotFound as exc:
            return error("restream", 404, str(exc))
        return web.json_response(
            {
                "account": request.match_info["account"],
                "modification_ts": max((r.modification_ts for r in table.values()), default=0),
                "data": {"resources": [r.to_json() for r in table.values()]},
            }
        )

    async def get_resource(self, request: web.Request) -> web.Response:
        rid = request.match_info["resource_id"]
        try:
            res = self._resource(request, rid)
        except NotFound as exc:
            return error("restream", 404, str(exc))
        data = res.to_json()
        del data["resource_id"]
        return web.json_response(
            {
                "account": request.match_info["account"],
                "resource_id": rid,
                "modification_ts": res.modification_ts,
                "data": data,
            }
        )

    async def create(self, request: web.Request) -> web.Response:
        try:
            self._table(request)
            body = validate_resource(await json_body(request))
        except NotFound as exc:
            return error("restream", 404, str(exc))
        except (BadJson, BodyError) as exc:
            return error("restream", 400, str(exc))
        rid = self.state.create(request.match_info["account"], body)
        return web.json_response(
            {"success": True, "code": 200, "message": "Resource created", "resource_id": rid}
        )

    async def replace(self, request: web.Request) -> web.Response:
        rid = request.match_info["resource_id"]
        try:
            self._resource(request, rid)
            body = validate_resource(await json_body(request))
        except NotFound as exc:
            return error("restream", 404, str(exc))
        except (BadJson, BodyError) as exc:
            return error("restream", 400, str(exc))
        self.state.replace(request.match_info["account"], rid, body)
        return web.json_response({"success": True, "code": 200, "message": "Resource updated"})

    async def status(self, request: web.Request) -> web.Response:
        account = request.match_info["account"]
        rid = request.query.get("resource_id")
        try:
            table = self._table(request)
            chosen = [self._resource(request, rid)] if rid else list(table.values())
        except NotFound as exc:
            return error("restream", 404, str(exc))
        named = self.sim.has_quirk("url-in-description")
        data = []
        for r in chosen:
            targets = self.state.status(account, r)
            if named:
                for target in targets:
                    _name_the_target(target)
            data.append({"resource_id": r.resource_id, "status": targets})
        return web.json_response({"account": account, "data": data})

    async def history(self, request: web.Request) -> web.Response:
        account = request.match_info["account"]
        q = request.query
        try:
            self._table(request)
        except NotFound as exc:
            return error("restream", 404, str(exc))
        for name in ("resource_id", "start", "end"):
            if not q.get(name):
                return error("restream", 400, f"Parameter '{name}' is required")
        try:
            lo, hi = parse_iso_z(q["start"]), parse_iso_z(q["end"])
        except ValueError:
            return error(
                "restream", 400, "Parameters 'start' and 'end' must be YYYY-mm-ddTHH:MM:SSZ"
            )
        if hi < lo:
            return error("restream", 400, "Parameter 'end' must not be before 'start'")
        if hi - lo > MAX_HISTORY_SECONDS:
            return error("restream", 400, "Period between start and end must be at most 31 days")
        rid = q["resource_id"]
        try:
            res = self._resource(request, rid)
        except NotFound as exc:
            return error("restream", 404, str(exc))
        return web.json_response(
            {
                "account": account,
                "resource_id": rid,
                "start": q["start"].removesuffix("Z"),
                "end": q["end"].removesuffix("Z"),
                "data": self.state.history(account, res, lo, hi),
            }
        )
