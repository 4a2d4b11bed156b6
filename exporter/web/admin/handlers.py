"""What the admin operations do: plain aiohttp handlers behind the gate's middlewares (auth,
errors, audit: exporter.web.admin.gate), each starting with ``admitted`` (account, path,
query, body). Most routes are the one ``passthrough``, shaped by the hooks the route table
gives it (``Route``); the few whose steps differ have a handler of their own here."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import structlog
from aiohttp import web

from exporter.restream import reply as rs
from exporter.talking_head import reply as th
from exporter.talking_head.reply import configurations_body
from exporter.talking_head.settings import TALKING_HEAD_MONTHLY_ALLOWANCE, TALKING_HEAD_SECTION
from exporter.upstream.client import MayRetry
from exporter.upstream.endpoint import Params
from exporter.web.admin.core import GENERATE_PER_MINUTE, Call, Rejected, invalid
from exporter.web.admin.gate import admitted
from exporter.web.admin.restore import has_mask, restore_secrets
from exporter.web.admin.validation import check_restream_resource, without_read_only
from exporter.web.admin.validation_th import check_generate
from exporter.web.masking import mask

log = structlog.get_logger("exporter.admin")

TALKING_HEAD_AREA = "talking_head"  # the poll runner's name of the area (exporter.runtime.areas)


async def passthrough(request: web.Request) -> web.StreamResponse:
    """The route's endpoint, sent with the request's path fields, and its reply passed on:
    the route's checks first (422), then its query, what it spends, its masker and what
    follows an agreed reply (the hooks of ``Route``)."""
    call = await admitted(request)
    route = call.route
    errors = route.check_query(call.query) if route.check_query else []
    errors += route.check_body(call.body) if route.check_body else []
    if errors:
        raise invalid(errors)
    params = route.params(call) if route.params else None
    may_retry = await route.spend(call) if route.spend else None
    fields = {name: call.param(name) for name in route.path_params if name != "account"}
    op = call.ctx.ops.send(
        route.endpoint, call.account, params=params, body=call.body, may_retry=may_retry, **fields
    )
    response = await call.passthrough(await call.upstream(op), route.masker)
    if route.done is not None and call.outcome == "ok":
        route.done(call)
    return response


def _reply_id(data: Any, key: str) -> str | None:
    if isinstance(data, dict):
        value = data.get(key)
        if isinstance(value, str | int) and not isinstance(value, bool) and str(value):
            return str(value)
    return None


# --- restream -----------------------------------------------------------------------------
async def restream_create(request: web.Request) -> web.StreamResponse:
    call = await admitted(request)
    errors = check_restream_resource(call.body)
    if not errors and has_mask(call.body):
        # Nothing is stored yet, so no mask can stand for a secret.
        errors = restore_secrets(call.body, None, call.state.masks, "a new resource")[1]
    if errors:
        raise invalid(errors)
    body = without_read_only(call.body)
    reply = await call.upstream(call.ctx.ops.send(rs.RESTREAM_CREATE, call.account, body=body))
    call.target = _reply_id(reply.data, "resource_id")
    return await call.passthrough(reply)


async def restream_update(request: web.Request) -> web.StreamResponse:
    call = await admitted(request)
    errors = check_restream_resource(call.body)
    if errors:
        raise invalid(errors)
    body = without_read_only(call.body)
    resource_id = call.param("resource_id")
    if has_mask(body):
        # Keep stored secrets: read the resource as it is now, put its values where the mask is.
        current = await call.upstream(
            call.ctx.ops.send(rs.RESTREAM_GET, call.account, resource_id=resource_id)
        )
        if not current.ok:
            return await call.passthrough(current)
        where = f"resource {resource_id}"
        body, errors = restore_secrets(body, current.data, call.state.masks, where)
        if errors:
            raise invalid(errors)
        call.body = body
    reply = await call.upstream(
        call.ctx.ops.send(rs.RESTREAM_UPDATE, call.account, body=body, resource_id=resource_id)
    )
    return await call.passthrough(reply)


def status_params(call: Call) -> Params:
    return rs.status_query(call.query.get("resource_id"))


def history_params(call: Call) -> Params:
    q = call.query
    return rs.history_query(q["resource_id"], q["start"], q["end"])


# --- talking head -------------------------------------------------------------------------
async def th_read(call: Call) -> MayRetry:
    """Count a talking-head read that goes to the platform (429 when the day's are spent); a
    retry of it is one more request of the allowance: spent like the first, and not sent when
    none is left (the last answer goes back as it is)."""
    call.spend_read()  # the minute's admin reads first: a refusal there spends no day's read
    budget = call.state.th_reads
    wait = await budget.take(call.account)
    if wait:
        raise Rejected(
            429,
            "rate_limited",
            f"at most {budget.per_day} talking-head reads a day per account reach the platform "
            f"through the admin API{_reads_share_note(call)} (admin.talking_head_reads_per_day, "
            "retries included; the platform allows "
            f"{TALKING_HEAD_MONTHLY_ALLOWANCE} talking-head requests a month in all); "
            f"retry in {wait} s",
            headers={"Retry-After": str(wait)},
        )

    async def may_retry() -> bool:
        return await call.state.th_reads.take(call.account) == 0

    return may_retry


def tasks_params(call: Call) -> Params:
    # A literal "+" in a query string arrives as a space; "+field" is what the caller meant.
    return [
        (k, "+" + v[1:] if k == "sort" and v.startswith(" ") else v) for k, v in call.query_pairs
    ]


def ended(how: str) -> Callable[[Call], None]:
    """The followed task ends once the platform agreed to end it (``how``)."""

    def end(call: Call) -> None:
        call.state.deps.tracker.ended(call.account, call.param("task_id"), how)

    return end


def _polled_configurations(call: Call) -> web.Response | None:
    """The configurations as the poller last read them, while its last poll succeeded and is
    younger than its interval (a failing platform is shown as it answers)."""
    catalogue = call.state.deps.catalogue
    conf = catalogue.latest_configurations(call.account)
    fetched = catalogue.fetched_at(call.account)
    if (
        conf is None
        or fetched is None
        or not call.ctx.runner.healthy(TALKING_HEAD_AREA, call.account)
    ):
        return None
    age = max(0.0, call.ctx.clock.time() - fetched)
    if age >= TALKING_HEAD_SECTION.of(call.ctx.settings).interval_seconds:
        return None
    call.outcome = "ok"
    body = mask(configurations_body(conf), call.state.masks)
    # The platform's answer to the poll: 200, as X-Upstream-Status says of a passed-through one.
    headers = {"Age": str(int(age)), "X-Served-From": "poll", "X-Upstream-Status": "200"}
    return web.json_response(body, headers=headers, dumps=json.dumps)


async def th_configurations(request: web.Request) -> web.StreamResponse:
    call = await admitted(request)
    polled = _polled_configurations(call)
    if polled is not None:
        return polled
    may_retry = await th_read(call)
    op = call.ctx.ops.send(th.TH_CONFIGURATIONS, call.account, may_retry=may_retry)
    return await call.passthrough(await call.upstream(op))


async def th_generate(request: web.Request) -> web.StreamResponse:
    call = await admitted(request)
    # The catalogue as last polled: no request spent; none yet, and its checks are skipped.
    catalogue = call.state.deps.catalogue.latest_configurations(call.account)
    errors = check_generate(call.body, catalogue)
    if errors:
        raise invalid(errors)
    wait = call.state.limiter.acquire(call.account)
    if wait:
        raise Rejected(
            429,
            "rate_limited",
            f"at most {call.state.limiter.limit} generate requests a minute per account"
            f"{_share_note(call)}; retry in {wait} s",
            headers={"Retry-After": str(wait)},
        )
    reply = await call.upstream(call.ctx.ops.send(th.TH_GENERATE, call.account, body=call.body))
    task_id = _reply_id(reply.data, "id")
    call.target = task_id
    response = await call.passthrough(reply)
    if call.outcome == "ok":
        if task_id is not None:
            call.state.deps.tracker.track(call.account, task_id)
        _refresh_quota(call)
    return response


def _reads_share_note(call: Call) -> str:
    replicas = call.ctx.settings.admin.replicas_per_shard
    if replicas == 1:
        return ""
    per_day = call.ctx.settings.admin.talking_head_reads_per_day
    return f" on this replica (the account's {per_day} shared by {replicas} replicas)"


def _share_note(call: Call) -> str:
    replicas = call.ctx.settings.admin.replicas_per_shard
    if replicas == 1:
        return ""
    return f" on this replica (the platform's {GENERATE_PER_MINUTE} shared by {replicas} replicas)"


def _refresh_quota(call: Call) -> None:
    """Refresh the quota gauge in the background (the answer does not wait for it)."""
    refresh = call.state.deps.refresh_quota
    account = call.account

    async def run() -> None:
        try:
            await refresh(account)
        except Exception as exc:  # the gauge refreshes on its own schedule anyway
            log.warning("quota_refresh_failed", account=account, error=repr(exc))

    task = asyncio.create_task(run())
    call.state.background.add(task)
    task.add_done_callback(call.state.background.discard)
