"""Admin reads cost the pollers nothing: a budget of their own, no pause from their 429s, and
a large reply masked and encoded off the event loop."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from exporter.web.admin import core
from tests.rig.table import READ_TOKEN

from .conftest import Admin, MakeAdmin

RS = "/app/restream/v2/demo-media"
LIST = "/restream/demo-media/resources"


async def test_reads_past_the_minute_s_budget_are_429_and_never_sent(
    make_admin: MakeAdmin,
) -> None:
    admin = await make_admin(reads_per_minute=3)
    paths = (LIST, "/restream/demo-media/status", "/dvr/demo-media/streams/live/main")
    for path in paths:
        assert (await admin.call("GET", path, token=READ_TOKEN))[0] == 200
    status, data, resp = await admin.call("GET", LIST, token=READ_TOKEN)
    assert (status, data["error"]) == (429, "rate_limited")
    assert "admin.reads_per_minute" in data["message"]
    assert resp.headers["Retry-After"] == "60"
    assert len(admin.upstream.requests) == 3
    other, _, _ = await admin.call("GET", "/restream/demo-shop/resources", token=READ_TOKEN)
    assert other == 200  # per account
    admin.clock.advance(60)
    assert (await admin.call("GET", LIST, token=READ_TOKEN))[0] == 200


async def test_a_rate_limit_answered_to_an_admin_read_pauses_no_poller(admin: Admin) -> None:
    admin.upstream.replies[("GET", f"{RS}/status")] = (429, {"success": False, "code": 429})
    status, _, _ = await admin.call("GET", "/restream/demo-media/status", token=READ_TOKEN)
    assert status == 429  # the platform's answer, passed on
    budget = admin.ctx.client.budget
    assert not budget.paused("demo-media")
    budget.take("demo-media", "restream")  # a poll may go: nothing raised


async def test_admin_reads_spend_nothing_of_the_pollers_budget(admin: Admin) -> None:
    for _ in range(5):
        assert (await admin.call("GET", LIST, token=READ_TOKEN))[0] == 200
    assert admin.ctx.client.budget.in_use("demo-media") == 0


async def test_a_large_reply_is_masked_and_encoded_off_the_event_loop(
    admin: Admin, monkeypatch: pytest.MonkeyPatch
) -> None:
    resources = [
        {"resource_id": str(i), "name": f"r{i}", "restreams": [{"target_key": f"key-{i}"}]}
        for i in range(2000)
    ]
    admin.upstream.replies[("GET", f"{RS}/resources")] = (200, {"data": {"resources": resources}})
    threads: list[str] = []
    real = core._encoded

    def spy(*args: Any) -> str:
        threads.append(threading.current_thread().name)
        return real(*args)

    monkeypatch.setattr(core, "_encoded", spy)
    status, data, _ = await admin.call("GET", LIST, token=READ_TOKEN)
    assert status == 200
    assert data["data"]["resources"][7]["restreams"][0]["target_key"].startswith("********#")
    assert threads
    assert threads[0] != threading.main_thread().name
