"""Before every upstream handler: log the request, apply faults, check the token."""

from __future__ import annotations

import asyncio
import json
import socket
import struct
from typing import TYPE_CHECKING, Any

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

from exporter.simulator.auth import TokenProblem
from exporter.simulator.faults import Fault
from exporter.simulator.http_common import FAULT_MESSAGES, area_for, error
from exporter.simulator.ratelimit import account_of, breach_reply
from exporter.simulator.requests_log import RecordedRequest

if TYPE_CHECKING:
    from exporter.simulator.simulator import Simulator

TOKEN_HEADER = "CDN-AUTH-TOKEN"
MALFORMED_BODY = '{"status": "ok", "data": [{"id": 1, "value": '
_FORMS = ("application/x-www-form-urlencoded", "multipart/form-data")


async def recorded_body(request: web.Request) -> Any:
    """The request body for the log: JSON, form fields (password masked), text, or None."""
    if request.content_type in _FORMS:
        form = await request.post()
        return {k: ("***" if k == "password" else str(v)) for k, v in form.items()}
    raw = await request.read()
    if not raw:
        return None
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return raw.decode("utf-8", "replace")[:2000]


def reset_connection(request: web.Request) -> None:
    """Drop the connection with a TCP reset and no reply."""
    transport = request.transport
    if transport is None:
        return
    sock = transport.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    transport.abort()


async def apply_fault(fault: Fault, request: web.Request, area: str) -> web.StreamResponse | None:
    """The faulty reply, or None when the request should go on (after a "slow" wait)."""
    if fault.kind == "slow":
        await asyncio.sleep(fault.delay)
        return None
    if fault.kind in ("500", "503", "504"):
        status = int(fault.kind)
        return error(area, status, FAULT_MESSAGES[status])
    if fault.kind == "malformed":
        return web.Response(text=MALFORMED_BODY, content_type="application/json")
    if fault.kind == "error_200":
        return web.json_response(fault.body)
    if fault.kind == "reset":
        reset_connection(request)
        raise asyncio.CancelledError  # nothing can be written any more
    return None


def token_message(area: str, problem: TokenProblem, invalid_only: bool = False) -> str:
    if invalid_only:
        return "Invalid token or no access"
    if problem is TokenProblem.EXPIRED:
        return "Token is expired"
    if area == "traffic":
        return "Invalid token or no access"
    if problem is TokenProblem.MISSING:
        return f"Missing {TOKEN_HEADER} header"
    return "Invalid token"


def shaped(sim: Simulator, reply: web.StreamResponse) -> web.StreamResponse:
    """An error reply in the shapes the quirks switch on (parameter errors as 420, the text in
    `description` only, no body at all), applied in that order."""
    if reply.status < 400 or not isinstance(reply, web.Response):
        return reply
    status = reply.status
    data: Any = None
    if isinstance(reply.body, bytes) and reply.content_type == "application/json":
        try:
            data = json.loads(reply.body)
        except ValueError:
            data = None
    changed = False
    if isinstance(data, dict):
        if sim.has_quirk("error-420") and status in (400, 422):
            text = data.get("message") or data.get("description") or data.get("error") or ""
            status, data, changed = 420, {"status": "error", "description": str(text)}, True
        if sim.has_quirk("description-errors") and "message" in data:
            text = data.pop("message")
            data["description"] = str(text or data.get("description") or "")
            changed = True
    if sim.has_quirk("bodyless-errors"):
        out = web.Response(status=status)
    elif changed:
        out = web.json_response(data, status=status)
    else:
        return reply
    for name in ("Retry-After", "Date"):
        if name in reply.headers:
            out.headers[name] = reply.headers[name]
    return out


def upstream_middleware(sim: Simulator) -> Middleware:
    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        path = request.path
        if path.startswith("/_sim") or path == "/":
            try:
                return await handler(request)
            except web.HTTPException as exc:
                if exc.status < 400:
                    raise
                return web.json_response({"error": exc.reason}, status=exc.status)
        return shaped(sim, await answer(request, handler))

    async def answer(request: web.Request, handler: Handler) -> web.StreamResponse:
        path = request.path
        area = area_for(path)
        token = request.headers.get(TOKEN_HEADER)
        sim.requests.append(
            RecordedRequest(
                time=sim.clock.time(),
                method=request.method,
                path=path,
                query=tuple(request.query.items()),
                body=await recorded_body(request),
                area=area or "unknown",
                token=token,
            )
        )
        if area is not None:
            fault = sim.faults.take(area, path)
            if fault is not None:
                reply = await apply_fault(fault, request, area)
                if reply is not None:
                    return reply
            if area != "auth":
                problem = sim.auth.check(token)
                if problem is not None:
                    if sim.has_quirk("empty-401"):
                        return web.Response(status=401)
                    invalid_only = sim.has_quirk("token-invalid-403")
                    return error(area, 403, token_message(area, problem, invalid_only))
                if area != "inventory":
                    wait = sim.rate.wait(account_of(request, area), sim.clock.time())
                    if wait is not None:
                        return breach_reply(sim, area, wait)
        try:
            return await handler(request)
        except web.HTTPException as exc:
            if exc.status < 400:
                raise
            return error(area, exc.status, exc.reason)

    return middleware
