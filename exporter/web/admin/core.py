"""What the admin surface is made of: its routes, its state, one request on its way (``Call``:
upstream call and pass-through) and the refusals it answers with (``Rejected``). The gate
that runs them is ``exporter.web.admin.gate``."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from aiohttp import web

from exporter.config.rules import GENERATE_PER_MINUTE as GENERATE_PER_MINUTE
from exporter.runtime.context import Context
from exporter.support.offloop import aside
from exporter.talking_head.reply import ThConfigurations
from exporter.talking_head.tasks import TaskTracker
from exporter.upstream import Reply, UpstreamError
from exporter.upstream.client import MayRetry
from exporter.upstream.endpoint import Endpoint, Params
from exporter.upstream.errors import error_message, is_error_body
from exporter.web.admin.readbudget import ReadBudget
from exporter.web.admin.validation import MAX_QUERY_VALUE, FieldError
from exporter.web.auth import Role
from exporter.web.masking import SecretMask, mask, secrets_in
from exporter.web.ratelimit import FailureThrottle, WindowLimit, client_address

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]  # plain aiohttp handler
Masker = Callable[[Any, SecretMask], Any]

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
    """One admin operation: how it is registered, documented, authorised and handled.

    ``endpoint`` is the platform operation it passes through (its name is the operation id,
    its path fields are the route's path parameters). ``handler`` None: the generic
    pass-through (``handlers.passthrough``), shaped by the hooks below it; a route whose
    steps differ (secrets restored, a limit of its own, an answer from the poll) names its
    own handler."""

    method: str
    path: str  # aiohttp pattern under /api/v1
    endpoint: Endpoint
    summary: str
    tag: str
    handler: Handler | None = None
    write: bool = False
    query: tuple[QueryParam, ...] = ()
    body: str | None = None  # component schema of the JSON body
    body_required: bool = False
    target: str | None = None  # path parameter naming the changed object
    success: int = 200
    limited: bool = False  # local rate limit (429)
    rules: tuple[str, ...] = ()  # rules beyond the document's schemas (a 422 may name them)
    # The pass-through's hooks, in the order it runs them: the checks of the query and the
    # body (422), the query sent on, what is spent before sending (it gives the retry
    # allowance), how the reply is masked, and what follows a reply the platform agreed to.
    check_query: Callable[[Mapping[str, str]], list[FieldError]] | None = None
    check_body: Callable[[Any], list[FieldError]] | None = None
    params: Callable[[Call], Params] | None = None
    spend: Callable[[Call], Awaitable[MayRetry | None]] | None = None
    masker: Masker = mask
    done: Callable[[Call], None] | None = None

    @property
    def operation_id(self) -> str:
        return self.endpoint.name

    @property
    def upstream(self) -> str:
        """The platform call, as the OpenAPI document describes it."""
        return self.endpoint.describe()

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
    """One admin request on its way through the gate (``request[CALL]``): what the
    middlewares and ``admitted`` learnt of it, and what its audit line reports."""

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
            found = await aside(secrets_in, reply.data) if large else None
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
                body = await aside(_encoded, masker, reply.data, masks)
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
