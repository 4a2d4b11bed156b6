"""The pipeline every admin route goes through: auth, account, query, body, upstream, audit."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Protocol

import structlog
from aiohttp import web

from exporter.config.rules import GENERATE_PER_MINUTE as GENERATE_PER_MINUTE
from exporter.runtime.context import Context
from exporter.talking_head.tasks import TaskTracker
from exporter.upstream import Reply, UpstreamError
from exporter.upstream.errors import error_message, is_error_body
from exporter.upstream.models import ThConfigurations
from exporter.web.admin.readbudget import ReadBudget
from exporter.web.admin.validation import (
    MAX_QUERY_VALUE,
    FieldError,
    check_query_names,
    check_segment,
    check_stream_name,
)
from exporter.web.auth import Role, authenticate
from exporter.web.masking import SecretMask, mask, secrets_in
from exporter.web.ratelimit import FailureThrottle, WindowLimit, client_address

audit_log = structlog.get_logger("exporter.admin.audit")
log = structlog.get_logger("exporter.admin")

Handler = Callable[["Call"], Awaitable[web.StreamResponse]]
Masker = Callable[[Any, SecretMask], Any]

MAX_JSON_DEPTH = 32  # deeper request bodies are refused (400) before anything walks them
_PARAM = re.compile(r"\{(\w+)(?::[^}]*)?\}")


@dataclass(frozen=True)
class QueryParam:
    name: str
    description: str
    required: bool = False
    schema: dict[str, Any] = field(default_factory=lambda: {"type": "string"})

    @property
    def document_schema(self) -> dict[str, Any]:
        """The schema the OpenAPI document states: a string value is at most
        ``MAX_QUERY_VALUE`` characters, as ``check_query_names`` enforces."""
        if self.schema.get("type") != "string":
            return self.schema
        return {**self.schema, "maxLength": min(self.schema.get("maxLength", MAX_QUERY_VALUE),
                                                MAX_QUERY_VALUE)}  # fmt: skip


@dataclass(frozen=True)
class Route:
    """One admin operation: how it is registered, documented, authorised and handled."""

    method: str
    path: str  # aiohttp pattern under /api/v1
    operation_id: str
    summary: str
    upstream: str
    tag: str
    handler: Handler
    write: bool = False
    query: tuple[QueryParam, ...] = ()
    body: str | None = None  # component schema of the JSON body
    body_required: bool = False
    target: str | None = None  # path parameter naming the changed object
    success: int = 200
    limited: bool = False  # local rate limit (429)
    rules: tuple[str, ...] = ()  # rules beyond the document's schemas (a 422 may name them)

    @property
    def openapi_path(self) -> str:
        return _PARAM.sub(lambda m: "{" + m.group(1) + "}", self.path)

    @property
    def path_params(self) -> list[str]:
        return _PARAM.findall(self.path)


class Catalogue(Protocol):
    """The talking-head catalogue as last polled (TalkingHeadPoller has it), so a generate
    request is checked without spending a request of the small monthly allowance."""

    def latest_configurations(self, account: str) -> ThConfigurations | None: ...

    def fetched_at(self, account: str) -> float | None: ...


@dataclass(frozen=True)
class AdminDeps:
    """What the admin surface uses beyond the Context, handed in by whoever builds the app
    (``exporter.web.daemon.create_app``: the talking-head area's parts)."""

    tracker: TaskTracker  # follows the tasks a generate submits; run by the Service
    catalogue: Catalogue
    refresh_quota: Callable[[str], Awaitable[None]]  # poll the quota now, after a generate


@dataclass
class AdminState:
    """What the admin app keeps between requests, and what it was handed."""

    limiter: WindowLimit
    deps: AdminDeps
    masks: SecretMask
    # Failed authentications per address and per credential (admin.auth_failures_per_minute),
    # of every authenticated route; None: off.
    auth_failures: FailureThrottle | None
    th_reads: ReadBudget  # talking-head reads that reach the platform (a day's share)
    reads: WindowLimit  # admin reads that reach the platform, per account (reads_per_minute)
    background: set[asyncio.Task[Any]] = field(default_factory=set)


class Rejected(Exception):
    """Answer now with our own JSON error (nothing more goes upstream)."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        fields: list[FieldError] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.fields = fields or []
        self.headers = headers or {}

    def response(self) -> web.Response:
        body: dict[str, Any] = {"error": self.code, "message": self.message}
        if self.fields:
            body["fields"] = [f.as_dict() for f in self.fields]
        return web.json_response(body, status=self.status, headers=self.headers)


def invalid(errors: list[FieldError], status: int = 422) -> Rejected:
    names = ", ".join(dict.fromkeys(e.field for e in errors))
    return Rejected(status, "invalid_request", f"invalid request: {names}", errors)


@dataclass
class Call:
    """One admin request on its way through the pipeline."""

    ctx: Context
    state: AdminState
    request: web.Request
    route: Route
    role: Role | None = None
    account: str = ""
    query: dict[str, str] = field(default_factory=dict)
    query_pairs: list[tuple[str, str]] = field(default_factory=list)
    body: Any = None
    target: str | None = None
    upstream_status: int | None = None
    outcome: str = "ok"
    read_spent: bool = False  # this request's admin read is spent (spend_read)

    def spend_read(self) -> None:
        """Spend one of the account's admin reads (``admin.reads_per_minute``); 429 when none
        is left this minute."""
        reads = self.state.reads
        wait = reads.acquire(self.account) if reads.limit else 60
        if wait:
            raise Rejected(
                429,
                "rate_limited",
                f"at most {reads.limit} admin reads a minute per account reach the platform "
                f"from this replica (admin.reads_per_minute); retry in {wait} s",
                headers={"Retry-After": str(wait)},
            )
        self.read_spent = True

    def param(self, name: str) -> str:
        return self.request.match_info[name]

    @property
    def client_address(self) -> str:
        """The caller's address (``admin.trusted_proxy_header`` honoured)."""
        proxy_header = self.ctx.settings.admin.trusted_proxy_header
        return client_address(self.request.remote, self.request.headers, proxy_header)

    async def upstream(self, op: Coroutine[Any, Any, Reply]) -> Reply:
        """Await an upstream operation; no reply becomes 502 (connection) or 504 (timeout).

        A read route spends one of the account's admin reads first (``admin.reads_per_minute``):
        none left, and the operation is never started (429 with ``Retry-After``)."""
        if not self.route.write and not self.read_spent:
            try:
                self.spend_read()
            except Rejected:
                op.close()
                raise
        # The call's own longest time, or the admin API's deadline when that is shorter.
        deadline = min(
            self.ctx.client.deadline(), self.ctx.settings.admin.upstream_deadline_seconds
        )
        try:
            reply = await asyncio.wait_for(op, deadline)
        except TimeoutError:
            raise Rejected(504, "upstream_timeout", "the platform did not answer in time") from None
        except UpstreamError as exc:
            text = self.ctx.redactor.text(exc.message)
            if exc.kind == "timeout":
                raise Rejected(
                    504, "upstream_timeout", f"the platform did not answer in time: {text}"
                ) from None
            if exc.kind == "auth":
                raise Rejected(
                    502, "upstream_auth", f"the exporter has no valid platform token: {text}"
                ) from None
            raise Rejected(
                502, "upstream_unreachable", f"the platform could not be reached: {text}"
            ) from None
        self.upstream_status = reply.status
        if reply.data is not None:
            large = len(reply.body) > ENCODE_OFF_LOOP_BYTES
            found = await asyncio.to_thread(secrets_in, reply.data) if large else None
            self.ctx.redactor.learn(*(found if found is not None else secrets_in(reply.data)))
        return reply

    async def passthrough(self, reply: Reply, masker: Masker = mask) -> web.Response:
        """The platform's status and body, secrets masked (a large body masked and encoded in
        a worker thread: a 5,000-resource list must not hold the event loop).

        A 2xx that is not JSON, or that carries an error body (the platform's rate-limit
        answer), is no success: it becomes 502 naming the problem, the platform's status in
        ``X-Upstream-Status``.
        """
        self.outcome = "ok" if reply.ok and not is_error_body(reply.data) else "upstream_error"
        headers = {"X-Upstream-Status": str(reply.status)}
        if reply.ok and reply.body and reply.data is None:
            raise Rejected(
                502,
                "upstream_invalid_reply",
                f"the platform answered {reply.status} with a body that is not JSON",
                headers=headers,
            )
        if reply.ok and is_error_body(reply.data):
            message = self.ctx.redactor.text(error_message(reply.data) or "an error body")
            raise Rejected(
                502,
                "upstream_error_body",
                f"the platform answered {reply.status} with an error: {message}",
                headers=headers,
            )
        if self.outcome == "ok" and self.route.body is not None:
            # A validated write the platform accepted: its secrets are real data now.
            self.ctx.redactor.learn(*secrets_in(self.body))
        if reply.status in (204, 304) or not reply.body:
            return web.Response(status=reply.status, headers=headers)
        if reply.data is not None:
            masks = self.state.masks
            if len(reply.body) > ENCODE_OFF_LOOP_BYTES:
                body = await asyncio.to_thread(_encoded, masker, reply.data, masks)
            else:
                body = _encoded(masker, reply.data, masks)
            return web.Response(
                status=reply.status,
                body=body,
                content_type="application/json",
                charset="utf-8",
                headers=headers,
            )
        raw = reply.body.decode("utf-8", "replace")
        return web.Response(
            status=reply.status,
            text=str(masker(raw, self.state.masks)),
            content_type="text/plain",
            headers=headers,
        )


ENCODE_OFF_LOOP_BYTES = 64 * 1024  # a reply this large is masked and encoded off the loop


def _encoded(masker: Masker, data: Any, masks: SecretMask) -> bytes:
    return json.dumps(masker(data, masks), ensure_ascii=False).encode()


# --- dispatch -----------------------------------------------------------------------------
def _number(text: str) -> int | float:
    """A JSON number with a fraction or exponent; whole ones become int (JSON Schema's integer
    includes 1.0, so the checks and the platform see 1)."""
    value = float(text)
    return int(value) if value.is_integer() else value


class DuplicateKey(ValueError):
    """A JSON object names one key twice (json.loads would keep the last one silently)."""

    def __init__(self, key: str) -> None:
        super().__init__(f"duplicate key {key!r}")
        self.key = key


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKey(key)
        out[key] = value
    return out


def loads_strict(raw: bytes) -> Any:
    """A JSON body: no NaN or Infinity, no key twice in one object (``DuplicateKey``)."""

    def reject(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    return json.loads(
        raw.decode("utf-8"), parse_constant=reject, parse_float=_number, object_pairs_hook=_unique
    )


async def _prepare(call: Call) -> None:
    ctx, route, request = call.ctx, call.route, call.request
    if not ctx.settings.admin.enabled:
        raise Rejected(404, "admin_disabled", "the admin surface is disabled (admin.enabled)")
    admin = ctx.settings.admin
    presented = request.headers.get("Authorization")
    call.role = authenticate(presented, admin.read_token, admin.write_token)
    if call.role is None:  # a valid token is never throttled, whoever else failed
        _throttle_failure(call, presented)
        raise Rejected(
            401,
            "unauthorized",
            "send Authorization: Bearer <read or write token>",
            headers={"WWW-Authenticate": 'Bearer realm="cdnvideo-exporter"'},
        )
    if route.write and call.role != "write":
        raise Rejected(403, "forbidden", "this operation changes data and needs the write token")
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
        call.body = await _read_body(request, route.body_required, seconds)


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


async def _read_body(request: web.Request, required: bool, seconds: float) -> Any:
    try:
        async with asyncio.timeout(seconds):
            raw = await request.read()
    except TimeoutError:
        raise Rejected(
            408,
            "body_timeout",
            f"the request body did not arrive within {seconds:g} s (server.body_timeout_seconds)",
            headers={"Connection": "close"},
        ) from None
    except web.HTTPRequestEntityTooLarge:
        raise Rejected(
            413,
            "body_too_large",
            f"the request body is larger than {request.client_max_size} bytes",
        ) from None
    if not raw.strip():
        if required:
            raise invalid([FieldError("body", "required: a JSON object")], 400)
        return {}
    try:
        body = loads_strict(raw)
    except DuplicateKey as exc:
        message = f"the key {exc.key!r} appears twice in one object; send it once"
        raise invalid([FieldError("body", message)], 400) from None
    except (ValueError, RecursionError):
        raise invalid([FieldError("body", "not valid JSON")], 400) from None
    if json_depth(body) > MAX_JSON_DEPTH:
        message = f"JSON nested deeper than {MAX_JSON_DEPTH} levels"
        raise invalid([FieldError("body", message)], 400)
    return body


def json_depth(value: Any) -> int:
    """How deeply objects and lists nest in a JSON value (a scalar is 0); no recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            depth += 1
            deepest = max(deepest, depth)
            if depth > MAX_JSON_DEPTH:
                return depth
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth) for child in children)
    return deepest


_OUTCOMES = {401: "unauthenticated", 403: "forbidden", 404: "not_found", 429: "rate_limited"}


def make_handler(
    ctx: Context, state: AdminState, route: Route
) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    """The aiohttp handler of one route."""

    async def handle(request: web.Request) -> web.StreamResponse:
        call = Call(ctx, state, request, route)
        response: web.StreamResponse
        try:
            await _prepare(call)
            response = await route.handler(call)
        except Rejected as rej:
            response = rej.response()
            call.outcome = _OUTCOMES.get(rej.status) or rej.code
        except Exception:  # our bug must still answer as JSON, and be logged
            log.exception("admin_handler_failed", operation=route.operation_id)
            response = Rejected(
                500, "internal_error", "internal error; see the exporter log"
            ).response()
            call.outcome = "internal_error"
        if route.write:
            _audit(call, response.status)
        return response

    return handle


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
