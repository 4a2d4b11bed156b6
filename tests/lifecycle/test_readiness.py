"""/readyz tells the truth per account and area: accounts the platform does not know, areas
never succeeded or with nothing to watch, counters held back (real simulator, HTTP)."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from aiohttp import web
from structlog.contextvars import merge_contextvars
from structlog.testing import capture_logs

from exporter.config import parse_config
from exporter.dvr.area import NOT_CONFIGURED
from exporter.simulator import SimConfig, Simulator, serve
from exporter.support.clock import FakeClock
from exporter.web.daemon import SERVICE
from exporter.web.landing import render_landing
from tests.rig.daemon import running

T0 = 1_767_225_600 + 17 * 3600 + 5
Ready = Callable[[], Awaitable[tuple[int, dict[str, Any]]]]


@asynccontextmanager
async def polled(
    accounts: list[Any],
    token: str = "",
    fault: str = "",
    fault_body: dict[str, Any] | None = None,
    path: str = "/readyz",
    conf: dict[str, Any] | None = None,
    app_out: list[web.Application] | None = None,
) -> AsyncIterator[tuple[Ready, list[Any]]]:
    """Every job of every account run once against the simulator (``fault``: that area
    answers 503, or ``fault_body`` with HTTP 200); ``path`` (``/readyz``) as a caller with
    the admin read token sees it, and the log lines of the polls and of every answer.
    ``app_out`` gets the app."""
    clock = FakeClock(T0)
    sim = Simulator(SimConfig(accounts=("demo-media", "demo-shop")), clock)
    sim_runner = await serve(sim)
    if fault:
        sim.faults.set(fault, "error_200" if fault_body else "503", body=fault_body)
    read = "read-token-0123456789abcdef"
    settings = parse_config(
        {
            "upstream": {"base_url": sim_runner.base_url, "token": token or sim.token},
            "accounts": accounts,
            "admin": {"enabled": True, "read_token": read, "write_token": "w" * 24},
            **(conf or {}),
        },
        env={},
    )
    try:
        async with running(settings, clock) as daemon:
            if app_out is not None:
                app_out.append(daemon.app)
            client, service = daemon.client, daemon.service
            service.ctx.client.backoff_seconds = 0.0
            with capture_logs(processors=[merge_contextvars]) as logs:
                for account in service.ctx.accounts:
                    for job in service.jobs(account):
                        await service.ctx.runner.run(job.area, account, job.poll, job.name)

                async def ready() -> tuple[int, dict[str, Any]]:
                    headers = {"Authorization": f"Bearer {read}"}
                    reply = await client.get(path, headers=headers)
                    return reply.status, await reply.json()

                yield ready, logs
    finally:
        await sim_runner.cleanup()


async def test_an_unknown_account_is_named_and_not_ready_while_a_known_one_is() -> None:
    async with polled([{"name": "nosuch"}, {"name": "demo-media"}]) as (ready, logs):
        status, detail = await ready()
    assert status == 200
    assert detail["ready_accounts"] == ["demo-media"]
    assert list(detail["unknown_accounts"]) == ["nosuch"]
    assert "not found" in detail["unknown_accounts"]["nosuch"].lower()
    unknown = [line for line in logs if line["event"] == "account_unknown"]
    assert [(line["account"], line["log_level"]) for line in unknown] == [("nosuch", "warning")]
    assert not [line for line in logs if line["event"] == "upstream_token_rejected"]


async def test_only_unknown_accounts_is_503_naming_them_without_blaming_the_token() -> None:
    # No DVR streams: their no-op poll "succeeds" and must not make the account ready.
    async with polled(["nosuch", "gone"]) as (ready, logs):
        status, detail = await ready()
    assert status == 503
    assert detail["ready"] is False
    assert sorted(detail["unknown_accounts"]) == ["gone", "nosuch"]
    assert detail["reason"] == "the platform knows none of the accounts: nosuch, gone"
    events = [line["event"] for line in logs]
    assert events.count("account_unknown") == 2
    assert "upstream_token_rejected" not in events


async def test_a_refused_token_is_still_called_refused_and_not_an_unknown_account() -> None:
    async with polled(["demo-media"], token="not-the-token") as (ready, logs):
        status, detail = await ready()
    assert status == 503
    assert detail["unknown_accounts"] == {}
    events = [line["event"] for line in logs]
    assert events.count("upstream_token_rejected") == 1
    assert "account_unknown" not in events


async def test_a_refused_token_is_given_in_the_platforms_words_in_readyz_and_on_the_page() -> None:
    apps: list[web.Application] = []
    async with polled(["demo-media"], token="not-the-token", app_out=apps) as (ready, _logs):
        status, detail = await ready()
        page = render_landing(apps[0][SERVICE].ctx, apps[0][SERVICE].areas)
    said = "Invalid token or no access (HTTP 403)"
    assert status == 503
    assert detail["areas"]["demo-media"]["traffic"] == {
        "ready": False,
        "reason": f"never succeeded since the start; last error: {said}",
        "last_error": said,
    }
    never = f"never succeeded since the start; last error: {said}"
    assert detail["reason"].startswith(f"traffic/demo-media: {never} (and ")
    assert f'data-state="failing">failing</span><br><span class="why">{said}</span>' in page


async def test_a_secret_in_the_platforms_error_is_masked_in_readyz_and_on_the_page() -> None:
    apps: list[web.Application] = []
    echo = {"status": "error", "message": "token demo-token refused for this account"}
    async with polled(["demo-media"], fault="restream", fault_body=echo, app_out=apps) as (
        ready,
        _logs,
    ):
        _, detail = await ready()
        page = render_landing(apps[0][SERVICE].ctx, apps[0][SERVICE].areas)
    error = detail["areas"]["demo-media"]["restream"]["last_error"]
    assert error == "token ******** refused for this account (HTTP 200)"
    assert "demo-token" not in str(detail)
    assert "demo-token" not in page
    assert error in page


async def test_an_area_that_never_succeeded_keeps_the_exporter_unready_and_is_named() -> None:
    async with polled(["demo-media"], fault="restream") as (ready, logs):
        status, detail = await ready()
        await ready()  # asked again, unchanged: no second line
    assert status == 503
    never = "never succeeded since the start; last error: Service unavailable (HTTP 503)"
    assert detail["reason"] == f"restream/demo-media: {never}"
    areas = detail["areas"]["demo-media"]
    assert areas["restream"] == {
        "ready": False,
        "reason": never,
        "last_error": "Service unavailable (HTTP 503)",
    }
    assert areas["traffic"] == areas["talking_head"] == {"ready": True}
    changes = [line for line in logs if line["event"] == "readiness_changed"]
    assert [(c["ready"], c["not_ready"][:2]) for c in changes] == [
        (
            False,
            [
                f"restream/demo-media: {never}",
                "dvr/demo-media: not configured: " + NOT_CONFIGURED,
            ],
        )
    ]


async def test_dvr_without_streams_is_not_configured_has_no_up_series_and_says_what_to_set() -> (
    None
):
    apps: list[web.Application] = []
    async with polled(["demo-media"], path="/-/ready", app_out=apps) as (ready, _logs):
        status, detail = await ready()
        ctx = apps[0][SERVICE].ctx
        up = ctx.metrics.registry.get_sample_value(
            "cdnvideo_up", {"account": "demo-media", "area": "dvr"}
        )
        page = render_landing(ctx, apps[0][SERVICE].areas)
    assert status == 200
    assert detail["areas"]["demo-media"]["dvr"] == {
        "ready": False,
        "reason": "not configured: " + NOT_CONFIGURED,
    }
    assert detail["ready_accounts"] == ["demo-media"]
    assert up is None
    assert "All DVR nodes alive" not in page
    assert 'data-state="unconfigured">not configured</span>' in page
    assert "name them in its <code>dvr_streams</code>" in page


async def test_counters_held_back_by_a_failing_state_file_make_the_exporter_unready(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state" / "traffic.json"
    state.parent.mkdir()  # as `run` makes it (tests/lifecycle/test_state_path_usable.py)
    apps: list[web.Application] = []
    conf = {"traffic": {"state_file": str(state)}}
    async with polled(["demo-media"], conf=conf, app_out=apps) as (ready, _logs):
        assert (await ready())[0] == 200
        service = apps[0][SERVICE]
        shutil.rmtree(state.parent)
        state.parent.write_text("a file where the directory was: every save fails")
        service.ctx.clock.advance(60)
        traffic = service.areas.traffic
        for job in traffic.jobs("demo-media"):
            await service.ctx.runner.run(job.area, "demo-media", job.poll, job.name)
        status, detail = await ready()
    assert status == 503
    reason = "traffic counters held back: the last save of the state file failed"
    assert detail["state_file"] == {"ready": False, "reason": reason}
    assert detail["reason"] == reason


async def test_prometheus_style_probe_paths_answer_as_the_others() -> None:
    async with polled(["demo-media"], path="/-/ready") as (ready, _logs):
        assert await ready() == (200, (await ready())[1])
    async with polled(["demo-media"], path="/-/healthy") as (healthy, _logs):
        assert await healthy() == (200, {"status": "ok"})
