"""The admin gate: the ``/api/v1`` sub-app's aiohttp middlewares, and ``admitted``.

Every admin operation (a ``Route`` of ``ROUTES``) passes, outermost first:

1. ``audit``: makes the request's ``Call`` (``request[CALL]``) and, for a change, logs one
   ``audit`` event with the final status, whatever happened inside (a refused token, a bad
   body and a failed platform included);
2. ``errors``: a ``Rejected`` becomes its JSON answer, any other exception 500
   ``internal_error`` (logged), and the call's outcome is set from either;
3. ``auth``: admin off (404), the bearer token (401; repeated failures 429 through the
   failure throttle), the write token for a change (403);

then the route's handler, a plain ``async def handler(request)``, whose first step is
``call = await admitted(request)``: the account (404), path segments and query names (422)
and the JSON body (400, 408, 413), in that order. Requests that are no operation (the OpenAPI
document, aiohttp's own 404 and 405) pass the middlewares untouched.
"""

from __future__ import annotations

from collections.abc import Mapping

import structlog
from aiohttp import web
from aiohttp.typedefs import Handler, Middleware
from aiohttp.web_urldispatcher import AbstractRoute

from exporter.runtime.context import Context
from exporter.web.admin.body import read_body
from exporter.web.admin.core import AdminState, Call, Rejected, Route, invalid
from exporter.web.admin.validation import (
    FieldError,
    check_query_names,
    check_segment,
    check_stream_name,
)
from exporter.web.auth import authenticate
from exporter.web.ratelimit import FailureThrottle

audit_log = structlog.get_logger("exporter.admin.audit")
log = structlog.get_logger("exporter.admin")

CALL: web.RequestKey[Call] = web.RequestKey("admin_call", Call)

_OUTCOMES = {401: "unauthenticated", 403: "forbidden", 404: "not_found", 429: "rate_limited"}


def gate(
    ctx: Context, state: AdminState, operations: Mapping[AbstractRoute, Route]
) -> list[Middleware]:
    """The middlewares of the admin sub-app, outermost first; ``operations``: the aiohttp
    route of each admin operation (filled as the routes are added)."""

    @web.middleware
    async def audit(request: web.Request, handler: Handler) -> web.StreamResponse:
        route = operations.get(request.match_info.route)
        if route is None:
            return await handler(request)
        call = request[CALL] = Call(ctx, state, request, route)
        response = await handler(request)
        if route.write:
            _audit(call, response.status)
        return response

    @web.middleware
    async def errors(request: web.Request, handler: Handler) -> web.StreamResponse:
        call = request.get(CALL)
        if call is None:
            return await handler(request)
        try:
            return await handler(request)
        except Rejected as rej:
            call.outcome = _OUTCOMES.get(rej.status) or rej.code
            return rej.response()
        except Exception:  # our bug must still answer as JSON, and be logged
            log.exception("admin_handler_failed", operation=call.route.operation_id)
            call.outcome = "internal_error"
            return Rejected(
                500, "internal_error", "internal error; see the exporter log"
            ).response()

    @web.middleware
    async def auth(request: web.Request, handler: Handler) -> web.StreamResponse:
        call = request.get(CALL)
        if call is not None:
            _authorise(call)
        return await handler(request)

    return [audit, errors, auth]


def _authorise(call: Call) -> None:
    admin = call.ctx.settings.admin
    if not admin.enabled:
        raise Rejected(404, "admin_disabled", "the admin surface is disabled (admin.enabled)")
    presented = call.request.headers.get("Authorization")
    call.role = authenticate(presented, admin.read_token, admin.write_token)
    if call.role is None:  # a valid token is never throttled, whoever else failed
        _throttle_failure(call, presented)
        raise Rejected(
            401,
            "unauthorized",
            "send Authorization: Bearer <read or write token>",
            headers={"WWW-Authenticate": 'Bearer realm="cdnvideo-exporter"'},
        )
    if call.route.write and call.role != "write":
        raise Rejected(403, "forbidden", "this operation changes data and needs the write token")


def _throttle_failure(call: Call, presented: str | None) -> None:
    """Count a failed authentication (``FailureThrottle``); 429 once its address or its
    credential had more than ``admin.auth_failures_per_minute`` in the last minute."""
    failures = call.state.auth_failures
    if failures is None:
        return
    wait = failures.failed(call.request.remote, call.request.headers, presented)
    if wait:
        raise throttled(failures, wait)


def throttled(failures: FailureThrottle, wait: int) -> Rejected:
    return Rejected(429, "rate_limited", failures.message(wait), headers={"Retry-After": str(wait)})


async def admitted(request: web.Request) -> Call:
    """The request's ``Call`` once its account, path, query and body passed the checks every
    operation shares (``Rejected`` otherwise); each handler's first step."""
    call = request[CALL]
    ctx, route = call.ctx, call.route
    call.account = request.match_info["account"]
    if call.account not in ctx.accounts:
        raise Rejected(404, "unknown_account", "this exporter does not serve that account")
    errors: list[FieldError] = []
    for name in route.path_params:
        if name == "account":
            continue
        value = request.match_info[name]
        errors += check_stream_name(value) if name == "stream_name" else check_segment(name, value)
    if route.target:
        call.target = request.match_info.get(route.target)
    call.query_pairs = list(request.query.items())
    call.query, query_errors = check_query_names(call.query_pairs, [q.name for q in route.query])
    errors += query_errors
    if errors:
        raise invalid(errors)
    if route.body is not None:
        seconds = ctx.settings.server.body_timeout_seconds
        call.body = await read_body(request, route.body_required, seconds)
    return call


def _audit(call: Call, status: int) -> None:
    """One structured event per change request; never bodies, tokens or secrets."""
    audit_log.info(
        "audit",
        route=f"{call.route.method} /api/v1{call.route.openapi_path}",
        operation=call.route.operation_id,
        account=call.account or call.request.match_info.get("account", ""),
        target=call.target,
        role=call.role or "none",
        upstream_status=call.upstream_status,
        status=status,
        outcome=call.outcome,
        remote=call.client_address,
    )
