"""What each admin operation does: plain aiohttp handlers behind the gate's middlewares (auth,
errors, audit: exporter.web.admin.gate), each starting with ``admitted`` (account, path,
query, body)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Coroutine
from typing import Any

import structlog
from aiohttp import web

from exporter.dvr import reply as dvr
from exporter.restream import reply as rs
from exporter.talking_head import reply as th
from exporter.talking_head.reply import configurations_body
from exporter.talking_head.settings import TALKING_HEAD_MONTHLY_ALLOWANCE, TALKING_HEAD_SECTION
from exporter.upstream.client import MayRetry
from exporter.upstream.reply import Reply
from exporter.web.admin.core import GENERATE_PER_MINUTE, Call, Rejected, invalid
from exporter.web.admin.gate import admitted
from exporter.web.admin.restore import has_mask, restore_secrets
from exporter.web.admin.validation import (
    check_dvr_delete,
    check_history_query,
    check_restream_resource,
    check_status_query,
    without_read_only,
)
from exporter.web.admin.validation_th import check_generate, check_rename, check_tasks_query
from exporter.web.masking import mask, mask_history, mask_video_link

log = structlog.get_logger("exporter.admin")

TALKING_HEAD_AREA = "talking_head"  # the poll runner's name of the area (exporter.runtime.areas)


def _reply_id(data: Any, key: str) -> str | None:
    if isinstance(data, dict):
        value = data.get(key)
        if isinstance(value, str | int) and not isinstance(value, bool) and str(value):
            return str(value)
    return None


# --- restream -----------------------------------------------------------------------------
async def restream_list(request: web.Request) -> web.StreamResponse:
    call = await admitted(request)
    return await call.passthrough(
        await call.upstream(call.ctx.ops.send(rs.RESTREAM_LIST, call.account))
    )


async def restream_get(request: web.Request) -> web.StreamResponse:
    call = await admitted(request)
    op = call.ctx.ops.send(rs.RESTREAM_GET, call.account, resource_id=call.param("resource_id"))
    return await call.passthrough(await call.upstream(op))


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


async def restream_status(request: web.Request) -> web.StreamResponse:
    call = await admitted(request)
    errors = check_status_query(call.query)
    if errors:
        raise invalid(errors)
    params = rs.status_query(call.query.get("resource_id"))
    op = call.ctx.ops.send(rs.RESTREAM_STATUS, call.account, params=params)
    return await call.passthrough(await call.upstream(op))


async def restream_history(request: web.Request) -> web.StreamResponse:
    call = await admitted(request)
    errors = check_history_query(call.query)
    if errors:
        raise invalid(errors)
    q = call.query
    params = rs.history_query(q["resource_id"], q["start"], q["end"])
    op = call.ctx.ops.send(rs.RESTREAM_HISTORY, call.account, params=params)
    return await call.passthrough(await call.upstream(op), mask_history)


# --- DVR ----------------------------------------------------------------------------------
async def dvr_get(request: web.Request) -> web.StreamResponse:
    call = await admitted(request)
    op = call.ctx.ops.send(dvr.DVR_GET, call.account, stream_name=call.param("stream_name"))
    return await call.passthrough(await call.upstream(op))


async def dvr_delete(request: web.Request) -> web.StreamResponse:
    call = await admitted(request)
    errors = check_dvr_delete(call.body)
    if errors:
        raise invalid(errors)
    stream_name = call.param("stream_name")
    op = call.ctx.ops.send(dvr.DVR_DELETE, call.account, body=call.body, stream_name=stream_name)
    return await call.passthrough(await call.upstream(op))


# --- talking head -------------------------------------------------------------------------
async def _spend_th_read(call: Call) -> None:
    """Count a talking-head read that goes to the platform; 429 when the day's are spent."""
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


def _retry_read(call: Call) -> MayRetry:
    """A retry of a talking-head read is one more request of the allowance: it is spent like
    the first, and not sent when none is left (the last answer goes back as it is)."""

    async def may_retry() -> bool:
        return await call.state.th_reads.take(call.account) == 0

    return may_retry


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
    await _spend_th_read(call)
    op = call.ctx.ops.send(th.TH_CONFIGURATIONS, call.account, may_retry=_retry_read(call))
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


async def th_status(request: web.Request) -> web.StreamResponse:
    call = await admitted(request)
    await _spend_th_read(call)
    task_id = call.param("task_id")
    op = call.ctx.ops.send(th.TH_STATUS, call.account, may_retry=_retry_read(call), task_id=task_id)
    return await call.passthrough(await call.upstream(op))


async def _end_task(
    call: Call, op: Coroutine[Any, Any, Reply], task_id: str, how: str
) -> web.StreamResponse:
    """Pass an ending operation through; the followed task ends only when the platform agreed."""
    response = await call.passthrough(await call.upstream(op))
    if call.outcome == "ok":
        call.state.deps.tracker.ended(call.account, task_id, how)
    return response


async def th_cancel(request: web.Request) -> web.StreamResponse:
    call = await admitted(request)
    task_id = call.param("task_id")
    op = call.ctx.ops.send(th.TH_CANCEL, call.account, task_id=task_id)
    return await _end_task(call, op, task_id, "canceled")


async def th_video_link(request: web.Request) -> web.StreamResponse:
    call = await admitted(request)
    await _spend_th_read(call)
    task_id = call.param("task_id")
    op = call.ctx.ops.send(
        th.TH_VIDEO_LINK, call.account, may_retry=_retry_read(call), task_id=task_id
    )
    return await call.passthrough(await call.upstream(op), mask_video_link)


async def th_rename(request: web.Request) -> web.StreamResponse:
    call = await admitted(request)
    errors = check_rename(call.body)
    if errors:
        raise invalid(errors)
    op = call.ctx.ops.send(
        th.TH_RENAME, call.account, body=call.body, task_id=call.param("task_id")
    )
    return await call.passthrough(await call.upstream(op))


async def th_delete(request: web.Request) -> web.StreamResponse:
    call = await admitted(request)
    task_id = call.param("task_id")
    op = call.ctx.ops.send(th.TH_DELETE, call.account, task_id=task_id)
    return await _end_task(call, op, task_id, "deleted")


async def th_tasks(request: web.Request) -> web.StreamResponse:
    call = await admitted(request)
    errors = check_tasks_query(call.query)
    if errors:
        raise invalid(errors)
    # A literal "+" in a query string arrives as a space; "+field" is what the caller meant.
    params = [
        (k, "+" + v[1:] if k == "sort" and v.startswith(" ") else v) for k, v in call.query_pairs
    ]
    await _spend_th_read(call)
    op = call.ctx.ops.send(th.TH_TASKS, call.account, params=params, may_retry=_retry_read(call))
    return await call.passthrough(await call.upstream(op))
