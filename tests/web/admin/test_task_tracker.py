"""Tasks generated through the admin surface are followed with backoff to their end state."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from exporter.exposition import Fragment, StoreKey
from exporter.talking_head.tasks import TASKS, TaskTracker, status_label

from .conftest import Admin
from .test_routes import GENERATE

TH = "/app/th-api/v1/accounts/demo-media"
SAFETY_SECONDS = 60  # only a broken build waits so long: the test fails instead of hanging


def set_status(admin: Admin, task_id: str, status: str, code: int = 200) -> None:
    body: Any = {"status": "ok", "task": {"id": task_id, "status": status, "attempts": 1}}
    admin.upstream.replies[("GET", f"{TH}/status/{task_id}")] = (code, body)


def status_polls(admin: Admin) -> int:
    return sum(1 for r in admin.upstream.requests if "/status/" in r.path)


def counts(admin: Admin, account: str = "demo-media") -> dict[str, float]:
    frag = admin.ctx.store.fragment(StoreKey("talking_head_tasks", account))
    assert isinstance(frag, Fragment)
    return {labels[1]: value for labels, value in frag.samples[TASKS]}


async def test_generated_task_is_followed_until_processed(admin: Admin) -> None:
    status, _, _ = await admin.call("POST", "/talking-head/demo-media/generate", json=GENERATE)
    assert status == 202
    tracker = admin.tracker
    assert counts(admin)["in_queue"] == 1
    assert await tracker.poll_due() == 0  # not due yet: no request spent
    set_status(admin, "task-1", "processing")
    admin.clock.advance(10)
    assert await tracker.poll_due() == 1
    assert counts(admin) == {"in_queue": 0, "processing": 1, "processed": 0, "canceled": 0}
    admin.clock.advance(10)
    assert await tracker.poll_due() == 0  # backoff doubled to 20 s
    set_status(admin, "task-1", "PROCESSED")
    admin.clock.advance(10)
    assert await tracker.poll_due() == 1
    assert counts(admin) == {"in_queue": 0, "processing": 0, "processed": 1, "canceled": 0}
    assert tracker.following() == []
    admin.clock.advance(3600)
    assert await tracker.poll_due() == 0
    assert status_polls(admin) == 2


async def test_canceled_task_ends_as_canceled(admin: Admin) -> None:
    tracker = TaskTracker(admin.ctx, first_delay=1)
    tracker.track("demo-media", "task-9")
    set_status(admin, "task-9", "canceled")
    admin.clock.advance(1)
    await tracker.poll_due()
    assert tracker.counts("demo-media")["canceled"] == 1
    assert tracker.following() == []


async def test_backoff_grows_to_the_cap(admin: Admin) -> None:
    tracker = TaskTracker(admin.ctx, first_delay=10, max_delay=40)
    tracker.track("demo-media", "task-1")
    times = []
    for _ in range(200):
        admin.clock.advance(1)
        if await tracker.poll_due():
            times.append(admin.clock.time())
        if len(times) == 5:
            break
    gaps = [round(b - a) for a, b in itertools.pairwise(times)]
    assert gaps == [20, 40, 40, 40]


async def test_upstream_trouble_keeps_following(admin: Admin) -> None:
    tracker = TaskTracker(admin.ctx, first_delay=1)
    tracker.track("demo-media", "task-1")
    set_status(admin, "task-1", "x", code=503)
    admin.clock.advance(1)
    await tracker.poll_due()
    assert tracker.following() == [("demo-media", "task-1", "in_queue")]
    set_status(admin, "task-1", "processed")
    admin.clock.advance(2)
    await tracker.poll_due()
    assert tracker.counts("demo-media")["processed"] == 1


async def test_a_task_that_disappears_stops_being_followed(admin: Admin) -> None:
    tracker = TaskTracker(admin.ctx, first_delay=1)
    tracker.track("demo-media", "gone")
    admin.upstream.replies[("GET", f"{TH}/status/gone")] = (404, {"status": "ERROR"})
    admin.clock.advance(1)
    await tracker.poll_due()
    assert tracker.following() == []
    assert tracker.counts("demo-media")["deleted"] == 1
    assert "unknown" not in tracker.counts("demo-media")


async def test_following_gives_up_after_a_day(admin: Admin) -> None:
    tracker = TaskTracker(admin.ctx, first_delay=600, max_delay=3600, give_up_after=86400)
    tracker.track("demo-media", "task-1")
    for _ in range(40):
        admin.clock.advance(3600)
        await tracker.poll_due()
    assert tracker.following() == []
    assert tracker.counts("demo-media")["in_queue"] == 1


async def test_run_loop_follows_on_its_own(admin: Admin) -> None:
    finished = asyncio.Event()  # set by the loop's own sleep once the task is no longer followed

    async def fake_sleep(seconds: float) -> None:
        admin.clock.advance(seconds)
        if tracker.counts("demo-media")["processed"] == 1 and not tracker.following():
            finished.set()
        await asyncio.sleep(0)

    tracker = TaskTracker(admin.ctx, first_delay=5, sleep=fake_sleep)
    set_status(admin, "task-1", "processed")
    loop = asyncio.create_task(tracker.run())
    try:
        tracker.track("demo-media", "task-1")
        await asyncio.wait_for(finished.wait(), SAFETY_SECONDS)
    finally:
        loop.cancel()
    assert status_polls(admin) == 1  # processed at the first check: followed no more


def test_status_labels_are_bounded() -> None:
    assert status_label("IN_QUEUE") == "in_queue"
    assert status_label("Cancelled") == "canceled"
    assert status_label("weird status!") == "unknown"
    assert status_label("x" * 100) == "unknown"


async def test_accounts_are_counted_apart(admin: Admin) -> None:
    tracker = TaskTracker(admin.ctx)
    tracker.track("demo-media", "a")
    tracker.track("demo-shop", "b")
    tracker.track("demo-shop", "b")  # once only
    assert tracker.counts("demo-media")["in_queue"] == 1
    assert tracker.counts("demo-shop")["in_queue"] == 1
