"""Admin reads have a budget and a lane of their own (issue 26, point 3): talking-head reads
spend at most a day's share of the monthly allowance per account, kept across restarts;
configurations come from the poll while it is fresh; pollers holding every upstream slot do
not make an admin read wait."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import structlog

from exporter.config import Settings, parse_config
from exporter.simulator import SimConfig, Simulator, serve
from exporter.support.clock import FakeClock
from exporter.talking_head.settings import TALKING_HEAD_MONTHLY_ALLOWANCE, TALKING_HEAD_SECTION
from exporter.upstream import UpstreamError
from exporter.web.admin.readbudget import state_path
from tests.rig.table import READ_TOKEN, FakeUpstream

from .conftest import Admin, MakeAdmin

TH = "/app/th-api/v1/accounts/demo-media"
STATUS = "/talking-head/demo-media/status/task-1"
CONFIGURATIONS = "/talking-head/demo-media/configurations"


def sent(admin: Admin, path: str) -> int:
    return sum(r.path == path for r in admin.upstream.requests)


async def test_a_day_s_share_of_reads_then_429_until_the_oldest_is_a_day_old(
    make_admin: MakeAdmin,
) -> None:
    admin = await make_admin(timeout=10)  # reads, not timeouts, are what this counts
    per_day = parse_config({"upstream": {"token": "t"}}, env={}).admin.talking_head_reads_per_day
    assert per_day * 30 == TALKING_HEAD_MONTHLY_ALLOWANCE  # the default: a day's share
    reads = ("/talking-head/demo-media/tasks", "/talking-head/demo-media/video/task-1", STATUS)
    for n in range(per_day):
        status, _, _ = await admin.call("GET", reads[n % 3], token=READ_TOKEN)
        assert status == 200, n
        admin.clock.advance(60)
    status, data, resp = await admin.call("GET", STATUS, token=READ_TOKEN)
    assert (status, data["error"]) == (429, "rate_limited")
    assert resp.headers["Retry-After"] == str(86400 - 60 * per_day)
    assert "admin.talking_head_reads_per_day" in data["message"]
    th_sent = sum(r.path.startswith(TH) for r in admin.upstream.requests)
    assert th_sent == per_day
    other, _, _ = await admin.call("GET", "/talking-head/demo-shop/status/task-1", token=READ_TOKEN)
    assert other == 200  # per account
    admin.clock.advance(86400 - 60 * per_day)
    assert (await admin.call("GET", STATUS, token=READ_TOKEN))[0] == 200


async def test_the_reads_of_the_day_survive_a_restart(
    make_admin: MakeAdmin, tmp_path: Path
) -> None:
    clock = FakeClock()
    state = str(tmp_path / "admin-state.json")
    first = await make_admin(clock=clock, talking_head_reads_per_day=3, state_file=state)
    for _ in range(2):
        assert (await first.call("GET", STATUS, token=READ_TOKEN))[0] == 200
    clock.advance(3600)
    restarted = await make_admin(clock=clock, talking_head_reads_per_day=3, state_file=state)
    assert (await restarted.call("GET", STATUS, token=READ_TOKEN))[0] == 200
    status, _, resp = await restarted.call("GET", STATUS, token=READ_TOKEN)
    assert status == 429
    assert resp.headers["Retry-After"] == str(86400 - 3600)
    assert sent(first, f"{TH}/status/task-1") + sent(restarted, f"{TH}/status/task-1") == 3


def test_the_state_file_defaults_to_one_next_to_the_traffic_state() -> None:
    def settings(**sections: object) -> Settings:
        return parse_config({"upstream": {"token": "t"}, **sections}, env={})

    traffic = settings(traffic={"state_file": "/var/lib/x/state.json"})
    assert state_path(traffic) == "/var/lib/x/state.json.admin"
    assert state_path(settings(admin={"state_file": "/tmp/a.json"})) == "/tmp/a.json"
    assert state_path(settings()) == ""  # kept in memory only


async def test_configurations_come_from_a_fresh_poll_without_spending(
    make_admin: MakeAdmin,
) -> None:
    admin = await make_admin(talking_head_reads_per_day=1)
    poller = admin.areas.talking_head.poller
    assert await admin.ctx.runner.run(
        "talking_head", "demo-media", lambda: poller.poll("demo-media")
    )
    assert sent(admin, f"{TH}/configurations") == 1
    admin.clock.advance(120)
    for _ in range(5):
        status, data, resp = await admin.call("GET", CONFIGURATIONS, token=READ_TOKEN)
        assert status == 200
        assert data["quota"] == {"limit": 10, "left": 9}
        assert data["voices"] == {"Alena": {"emotions": ["neutral", "good"]}}
        assert (resp.headers["X-Served-From"], resp.headers["Age"]) == ("poll", "120")
    assert sent(admin, f"{TH}/configurations") == 1  # nothing more sent
    assert (await admin.call("GET", STATUS, token=READ_TOKEN))[0] == 200  # budget untouched
    # Once the poll is older than the poll interval, a read goes to the platform (and spends).
    admin.clock.advance(TALKING_HEAD_SECTION.of(admin.ctx.settings).interval_seconds)
    status, _, resp = await admin.call("GET", CONFIGURATIONS, token=READ_TOKEN)
    assert status == 429  # the day's one read is spent
    assert sent(admin, f"{TH}/configurations") == 1


async def test_configurations_pass_through_while_the_poll_fails(make_admin: MakeAdmin) -> None:
    admin = await make_admin()
    poller = admin.areas.talking_head.poller
    assert await admin.ctx.runner.run(
        "talking_head", "demo-media", lambda: poller.poll("demo-media")
    )
    admin.upstream.replies[("GET", f"{TH}/configurations")] = (503, {"message": "down"})
    assert not await admin.ctx.runner.run(
        "talking_head", "demo-media", lambda: poller.poll("demo-media")
    )
    status, _, resp = await admin.call("GET", CONFIGURATIONS, token=READ_TOKEN)
    assert (status, resp.headers["X-Upstream-Status"]) == (503, "503")  # as the platform answers
    assert "X-Served-From" not in resp.headers


# --- the admin lane -----------------------------------------------------------------------
@pytest.fixture
async def sim_admin(make_admin: MakeAdmin) -> AsyncIterator[tuple[Admin, Simulator]]:
    clock = FakeClock()
    sim = Simulator(SimConfig(), clock)
    runner = await serve(sim, "127.0.0.1", 0)
    try:
        yield await make_admin(base_url=runner.base_url, token=sim.token, clock=clock), sim
    finally:
        await runner.cleanup()


async def test_an_admin_read_is_answered_while_pollers_hold_every_slot(
    sim_admin: tuple[Admin, Simulator],
) -> None:
    admin, sim = sim_admin
    # Every traffic request hangs past the client's timeout (make_context: 2 s).
    sim.faults.set("traffic", "slow", delay=2.5)
    slots = admin.ctx.settings.upstream.max_concurrency
    polls = [
        asyncio.create_task(
            admin.ctx.client.request("traffic", "GET", "/app/metrics/v1/", account="demo-media")
        )
        for _ in range(slots + 2)
    ]
    try:
        status, data, _ = await admin.call(
            "GET", "/restream/demo-media/resources", token=READ_TOKEN
        )
        assert status == 200
        assert data["data"]["resources"]
        assert not any(p.done() for p in polls)  # the pollers still hang
    finally:
        for poll in polls:
            poll.cancel()
        results = await asyncio.gather(*polls, return_exceptions=True)
    assert all(isinstance(r, asyncio.CancelledError | UpstreamError) for r in results)


async def test_an_admin_request_has_its_own_deadline(make_admin: MakeAdmin) -> None:
    # The client's own timeout is longer than the test waits: only the admin deadline can end it.
    upstream = FakeUpstream(hang=True)
    admin = await make_admin(upstream=upstream, timeout=600, upstream_deadline_seconds=0.2)
    try:
        call = admin.call("GET", "/restream/demo-media/resources", token=READ_TOKEN)
        status, data, resp = await asyncio.wait_for(call, 60)
        still_hanging = (len(upstream.requests), upstream.answered)
    finally:
        upstream.release()
    assert (status, data["error"]) == (504, "upstream_timeout")
    assert "X-Upstream-Status" not in resp.headers
    assert still_hanging == (1, 0)  # the platform was asked once and had not answered


@pytest.mark.parametrize("content", [b"not json", b'{"version": 9}', b"[1, 2]"])
async def test_a_state_file_not_ours_is_logged_and_counted_afresh(
    make_admin: MakeAdmin, tmp_path: Path, content: bytes
) -> None:
    state = tmp_path / "admin-state.json"
    state.write_bytes(content)
    with structlog.testing.capture_logs() as logs:
        admin = await make_admin(talking_head_reads_per_day=1, state_file=str(state))
    assert [e["event"] for e in logs if e["log_level"] == "warning"] == ["admin_state_unreadable"]
    assert (await admin.call("GET", STATUS, token=READ_TOKEN))[0] == 200
    assert (await admin.call("GET", STATUS, token=READ_TOKEN))[0] == 429
    assert json.loads(state.read_bytes())["version"] == 1  # written again, in our format


async def test_the_day_s_reads_are_shared_by_the_replicas_of_a_shard(
    make_admin: MakeAdmin,
) -> None:
    """Two replicas serve the account: each allows half, so together they spend the day's."""
    admin = await make_admin(talking_head_reads_per_day=6, replicas_per_shard=2)
    for _ in range(3):
        assert (await admin.call("GET", STATUS, token=READ_TOKEN))[0] == 200
    status, data, _ = await admin.call("GET", STATUS, token=READ_TOKEN)
    assert status == 429
    assert "the account's 6 shared by 2 replicas" in data["message"]
    assert sent(admin, f"{TH}/status/task-1") == 3


async def test_each_retry_of_a_read_is_a_read_of_the_allowance(make_admin: MakeAdmin) -> None:
    admin = await make_admin(talking_head_reads_per_day=2)
    admin.ctx.client.retries = 2  # up to three attempts, as the daemon's client makes
    admin.upstream.replies[("GET", f"{TH}/status/task-1")] = (503, {"status": "ERROR"})
    status, _, resp = await admin.call("GET", STATUS, token=READ_TOKEN)
    assert (status, resp.headers["X-Upstream-Status"]) == (503, "503")
    assert sent(admin, f"{TH}/status/task-1") == 2  # the third attempt had no read left
    status, data, _ = await admin.call("GET", STATUS, token=READ_TOKEN)
    assert (status, data["error"]) == (429, "rate_limited")
    assert sent(admin, f"{TH}/status/task-1") == 2
