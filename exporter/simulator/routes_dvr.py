"""`/app/dvr-net/v1/<account>/streams/<stream_name>`: read per node, delete a range or all."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aiohttp import web

from exporter.simulator.dataset import DvrStream
from exporter.simulator.http_common import BadJson, error, json_body

if TYPE_CHECKING:
    from exporter.simulator.simulator import Simulator

PATH = "/app/dvr-net/v1/{account}/streams/{stream_name:.+}"


class Invalid(ValueError):
    """400 with this description."""


def _int(body: dict[str, Any], key: str) -> int:
    value = body[key]
    if isinstance(value, bool) or not isinstance(value, int):
        raise Invalid(f"Field '{key}' must be an integer")
    return value


def parse_delete(body: Any) -> tuple[str, int, int | None, dict[str, Any]]:
    """(host, from_ts, end or None for `all`, echo fields) of a DELETE body."""
    if not isinstance(body, dict):
        raise Invalid("Request body must be a JSON object")
    host = body.get("host")
    if not isinstance(host, str) or not host:
        raise Invalid("Field 'host' is required (a node identifier or '*')")
    if "all" in body:
        if body["all"] is not True:
            raise Invalid("Field 'all' must be true")
        if any(k in body for k in ("from_ts", "duration_sec", "to_ts")):
            raise Invalid("Field 'all' cannot be combined with from_ts, duration_sec or to_ts")
        return host, 0, None, {"host": host, "all": True}
    if "from_ts" not in body:
        raise Invalid("Field 'from_ts' is required (or 'all': true)")
    lo = _int(body, "from_ts")
    given = [k for k in ("duration_sec", "to_ts") if k in body]
    if len(given) != 1:
        raise Invalid("Exactly one of 'duration_sec' or 'to_ts' is required")
    key = given[0]
    value = _int(body, key)
    hi = lo + value if key == "duration_sec" else value
    if hi <= lo:
        raise Invalid(f"Field '{key}' must give an end after from_ts")
    return host, lo, hi, {key: value, "from_ts": lo, "host": host}


class DvrRoutes:
    """Handlers of the network DVR area."""

    def __init__(self, sim: Simulator) -> None:
        self.sim = sim
        self.state = sim.dvr

    def routes(self) -> list[web.RouteDef]:
        return [web.get(PATH, self.read), web.delete(PATH, self.delete)]

    def _stream(self, request: web.Request) -> DvrStream | web.Response:
        streams = self.state.streams.get(request.match_info["account"])
        if streams is None:
            return error("dvr", 404, "Account not found")
        stream = streams.get(request.match_info["stream_name"])
        if stream is None:
            return error("dvr", 404, "Stream not found")
        return stream

    async def read(self, request: web.Request) -> web.Response:
        stream = self._stream(request)
        if isinstance(stream, web.Response):
            return stream
        records = self.state.records(request.match_info["account"], stream)
        return web.json_response(
            {"status": "Completed", "stream_name": stream.name, "data": records}
        )

    async def delete(self, request: web.Request) -> web.Response:
        stream = self._stream(request)
        if isinstance(stream, web.Response):
            return stream
        try:
            host, lo, hi, echo = parse_delete(await json_body(request))
        except (BadJson, Invalid) as exc:
            return error("dvr", 400, str(exc))
        visible = self.state.visible_hosts(stream)
        if host == "*":
            hosts = visible
        elif host in visible:
            hosts = [host]
        else:
            return error("dvr", 404, f"Host {host} does not hold stream {stream.name}")
        account = request.match_info["account"]
        failed = self.state.delete(
            account, stream, hosts, lo, self.state.now() if hi is None else hi
        )
        if failed:
            return error(
                "dvr",
                500,
                f"Deletion failed on {len(failed)} of {len(hosts)} host(s)",
                failed_hosts=failed,
            )
        return web.json_response({"status": "Completed", "stream_name": stream.name, **echo})
