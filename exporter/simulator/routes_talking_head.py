"""`/app/th-api/v1/accounts/<account>/...`: configurations, generate, tasks and videos."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from aiohttp import web

from exporter.simulator.hashing import hex_id
from exporter.simulator.http_common import BadJson, error, json_body
from exporter.simulator.talking_head import (
    BASE_FIELDS,
    EXTRA_FIELDS,
    LINK_SECONDS,
    LimitExceeded,
    Task,
    WrongStatus,
)
from exporter.simulator.talking_head_validate import (
    MAX_NAME,
    BadRequest,
    UnknownParameters,
    validate_generation,
)

if TYPE_CHECKING:
    from exporter.simulator.simulator import Simulator

BASE = "/app/th-api/v1/accounts/{account}"
DEFAULT_LIMIT = 100
Handler = Callable[[web.Request], Awaitable[web.Response]]


def _fail(status: int, message: str) -> web.Response:
    return error("talking_head", status, message)


def parse_date(name: str, value: str) -> float:
    """`YYYY-MM-DDThh:mm:00` with `Z`, an offset or nothing (UTC); seconds must be 00."""
    text = value.strip().replace(" ", "+")  # a '+' in a query string arrives as a space
    try:
        dt = datetime.fromisoformat(text)
    except ValueError:
        raise BadRequest(f"Parameter '{name}' must look like 2026-01-01T00:00:00Z") from None
    if dt.second or dt.microsecond:
        raise BadRequest(f"Parameter '{name}': seconds must be 00")
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp()


def _nonneg(name: str, value: str | None, default: int) -> int:
    if value is None or value == "":
        return default
    if not value.isdigit():
        raise BadRequest(f"Parameter '{name}' must be a non-negative integer")
    return int(value)


class TalkingHeadRoutes:
    """Handlers of the talking-head area; every request spends one of the monthly allowance."""

    def __init__(self, sim: Simulator) -> None:
        self.sim = sim
        self.state = sim.talking_head

    def routes(self) -> list[web.RouteDef]:
        w = self._wrap
        return [
            web.get(f"{BASE}/configurations", w(self.configurations)),
            web.post(f"{BASE}/generate", w(self.generate)),
            web.get(f"{BASE}/status/{{task_id}}", w(self.status)),
            web.delete(f"{BASE}/cancel/{{task_id}}", w(self.cancel)),
            web.get(f"{BASE}/video/{{task_id}}", w(self.video_link)),
            web.patch(f"{BASE}/video/{{task_id}}", w(self.rename)),
            web.delete(f"{BASE}/video/{{task_id}}", w(self.delete_video)),
            web.get(f"{BASE}/tasks", w(self.tasks)),
        ]

    def _wrap(self, handler: Handler) -> Handler:
        async def wrapped(request: web.Request) -> web.Response:
            account = request.match_info["account"]
            if account not in self.state.accounts:
                return _fail(404, "Invalid account")
            try:
                self.state.count_request(account)
                return await handler(request)
            except LimitExceeded as exc:
                return _fail(429, str(exc))
            except (BadRequest, BadJson) as exc:
                return _fail(400, str(exc))

        return wrapped

    def _task(self, request: web.Request) -> Task | None:
        return self.state.visible(request.match_info["account"], request.match_info["task_id"])

    async def configurations(self, request: web.Request) -> web.Response:
        return web.json_response(self.state.configurations(request.match_info["account"]))

    async def generate(self, request: web.Request) -> web.Response:
        account = request.match_info["account"]
        self.state.check_generate_rate(account)
        try:
            g = validate_generation(await json_body(request))
        except UnknownParameters as exc:
            return _fail(422, str(exc))
        task = self.state.generate(account, g)
        return web.json_response({"status": "ok", "id": task.id}, status=202)

    async def status(self, request: web.Request) -> web.Response:
        task = self._task(request)
        if task is None:
            return _fail(404, "No such task")
        return web.json_response({"status": "ok", "task": self.state.task_json(task)})

    async def cancel(self, request: web.Request) -> web.Response:
        task = self._task(request)
        if task is None:
            return _fail(404, "No such task")
        try:
            self.state.cancel(task)
        except WrongStatus as exc:
            return _fail(400, str(exc))
        return web.json_response({"status": "ok"})

    async def video_link(self, request: web.Request) -> web.Response:
        task = self._task(request)
        if task is None:
            return _fail(404, "no such video")
        status = self.state.task_status(task)
        if status != "processed":
            return _fail(400, f"Video is not ready (task status: {self.state.status_text(status)})")
        expires = int(self.state.now()) + LINK_SECONDS
        ip = request.remote or "unknown"
        sig = hex_id(self.sim.config.seed, "link", task.id, expires, ip, length=16)
        url = f"{self.state.video_url(task)}?expires={expires}&ip={ip}&sig={sig}"
        return web.json_response({"status": "ok", "url": url})

    async def rename(self, request: web.Request) -> web.Response:
        task = self._task(request)
        if task is None:
            return _fail(404, "no such video")
        body: Any = await json_body(request, optional=True) or {}
        if not isinstance(body, dict):
            raise BadRequest("Request body must be a JSON object")
        unknown = sorted(set(body) - {"video_name"})
        if unknown:
            return _fail(422, f"Incorrect parameter names: {', '.join(unknown)}")
        if "video_name" not in body:
            return web.json_response({"status": "ok", "message": "Nothing to change"})
        name = body["video_name"]
        if not isinstance(name, str):
            raise BadRequest("Field 'video_name' must be a string")
        if len(name) > MAX_NAME:
            raise BadRequest(f"Field 'video_name' must be at most {MAX_NAME} characters")
        task.video_name = name
        return web.json_response({"status": "ok", "message": "Video renamed"})

    async def delete_video(self, request: web.Request) -> web.Response:
        task = self._task(request)
        if task is None or not self.state.delete(task.account, task.id):
            return _fail(404, "no such video")
        return web.json_response({"status": "ok", "message": "Video deleted"})

    async def tasks(self, request: web.Request) -> web.Response:
        q = request.query
        account = request.match_info["account"]
        start = parse_date("start", q["start"]) if q.get("start") else None
        end = parse_date("end", q["end"]) if q.get("end") else None
        offset = _nonneg("offset", q.get("offset"), 0)
        limit = _nonneg("limit", q.get("limit"), DEFAULT_LIMIT)
        fields = tuple(f.strip() for f in q.get("fields", "").split(",") if f.strip())
        for f in fields:
            if f not in EXTRA_FIELDS:
                raise BadRequest(f"Unknown field '{f}'; known: {', '.join(EXTRA_FIELDS)}")
        sort = q.get("sort", "-date")
        descending = sort.startswith("-")
        sort_field = sort.lstrip("+- ")
        if sort_field not in BASE_FIELDS + EXTRA_FIELDS or sort_field == "circle":
            raise BadRequest(f"Cannot sort by '{sort_field}'")
        tasks = [
            t
            for t in self.state.tasks(account)
            if (start is None or t.created >= start)
            and (end is None or t.created < end)
            and (not q.get("id") or t.id == q["id"])
        ]
        records = [self.state.record(t, EXTRA_FIELDS) for t in tasks]
        records.sort(key=lambda r: (r[sort_field], r["id"]), reverse=descending)
        page = records[offset : offset + limit]
        wanted = BASE_FIELDS + fields
        return web.json_response([{k: r[k] for k in wanted} for r in page])
