"""A context with published fragments for landing-page tests (the areas' own specs)."""

from __future__ import annotations

from exporter.dvr import families as dvr
from exporter.exposition import FragmentBuilder, StoreKey
from exporter.restream import families as restream
from exporter.talking_head import families as th
from exporter.talking_head.tasks import TaskTracker
from exporter.traffic import audit
from exporter.traffic import families as traffic

NOW = 1_767_225_600.0 + 3600

WINDOW_END = traffic.ACCOUNT.window_end
LATE_SHARE = traffic.LATE_SHARE
STATUS_CODE, STATUS_INFO = restream.STATUS_CODE, restream.STATUS_INFO
ACTIVE, SCHEDULED = restream.RESOURCE_ACTIVE, restream.SCHEDULED
ALIVE = dvr.ALIVE
QUOTA_LEFT, QUOTA_LIMIT = th.QUOTA_LEFT, th.QUOTA_LIMIT

EVIL = '<script>alert("x")</script>'


def publish_demo(ctx) -> None:  # type: ignore[no-untyped-def]
    """demo-media: one failing restream target (and a hostile one), two stopped on purpose
    (res-9 inactive, res-10 outside its schedule), one dead DVR node, quota 1234 of 1500, a
    window, a lateness profile. demo-shop: everything fine; its restream fragment is stale."""
    store = ctx.store
    b = FragmentBuilder()
    b.add(WINDOW_END, ("demo-media",), NOW - 180)
    for after, share in (("60", 0.0), ("5", 0.008), ("15", 0.001)):
        b.add(LATE_SHARE, ("demo-media", after), share)
    store.publish(StoreKey("traffic", "demo-media"), b.build())

    # yesterday's audit of demo-media found one minute revised; demo-shop was never audited
    b = FragmentBuilder()
    b.add(audit.MINUTES, ("demo-media", "equal"), 60 * 60)  # seconds of traffic
    b.add(audit.MINUTES, ("demo-media", "differs"), 5 * 60)
    for key in ("edge_requests_total", "edge_status_200", "origin_requests_total"):
        b.add(audit.DIFFERENCE, ("demo-media", key), 1 if key.startswith("edge") else 0)
    b.add(audit.LAST, ("demo-media",), NOW - 7200)
    store.publish(StoreKey("traffic_audit", "demo-media"), b.build())

    b = FragmentBuilder()
    bad = ("demo-media", "res-7", "rtmp://origin/live/main", "rtmp://target.example/app", "k1a2")
    good = ("demo-media", "res-8", "rtmp://origin/live/news", "rtmp://ok.example/app", "k9")
    evil = (
        "demo-media",
        EVIL,
        "rtmp://u:leaked-pw@src/x",
        "srt://t:9000?streamid=leaked-sid",
        "k3",
    )
    b.add(STATUS_CODE, bad, 3)
    b.add(STATUS_CODE, good, 0)
    b.add(STATUS_CODE, evil, 7)
    b.add(STATUS_INFO, (*bad, "3", "Source stream is not published"), 1)
    b.add(STATUS_INFO, (*good, "0", "OK"), 1)
    b.add(STATUS_INFO, (*evil, "7", "Restream stopped"), 1)
    idle = ("demo-media", "res-9", "rtmp://origin/live/idle", "rtmp://idle.example/app", "k4")
    later = ("demo-media", "res-10", "rtmp://origin/live/late", "rtmp://late.example/app", "k5")
    b.add(STATUS_CODE, idle, 5)
    b.add(STATUS_CODE, later, 7)
    b.add(STATUS_INFO, (*idle, "5", "No status changes found"), 1)
    for resource, active in (("res-7", 1), ("res-8", 1), ("res-9", 0), ("res-10", 1)):
        b.add(ACTIVE, ("demo-media", resource), active)
    for target, scheduled in ((bad, 1), (good, 1), (idle, 1), (later, 0)):
        b.add(SCHEDULED, target, scheduled)
    store.publish(StoreKey("restream", "demo-media"), b.build())

    b = FragmentBuilder()
    b.add(ALIVE, ("demo-media", "live/main", "node-dead-1"), 0)
    b.add(ALIVE, ("demo-media", "live/main", "node-ok-2"), 1)
    store.publish(StoreKey("dvr", "demo-media"), b.build())

    b = FragmentBuilder()
    b.add(QUOTA_LEFT, ("demo-media",), 1234)
    b.add(QUOTA_LIMIT, ("demo-media",), 1500)
    store.publish(StoreKey("talking_head", "demo-media"), b.build())

    b = FragmentBuilder()
    b.add(STATUS_CODE, ("demo-shop", "r1", "s", "t", "k"), 0)
    store.publish(StoreKey("restream", "demo-shop"), b.build(), max_age=1)

    ctx.metrics.last_success.labels("demo-media", "traffic").set(NOW - 60)
    ctx.metrics.up.labels("demo-media", "traffic").set(1)


async def run_polls(ctx) -> None:  # type: ignore[no-untyped-def]
    async def ok() -> None:
        return None

    async def fail() -> None:
        raise RuntimeError("upstream said no")

    await ctx.runner.run("traffic", "demo-media", ok)
    await ctx.runner.run("restream", "demo-media", fail)
    tracker = TaskTracker(ctx)
    tracker.track("demo-media", "task-1")


async def demo_landing(session, **ctx_kw):  # type: ignore[no-untyped-def]
    """(ctx, areas) of a daemon whose store holds the demo fragments at NOW, after a
    successful traffic poll and a failed restream poll, as the landing-page tests read it."""
    from exporter.support.clock import FakeClock
    from tests.web.admin.conftest import make_context, make_service

    clock = FakeClock(NOW - 3600)
    ctx = make_context("http://127.0.0.1:9", session, clock=clock, **ctx_kw)
    areas = make_service(ctx).areas
    ctx.started_at = NOW - 3600
    publish_demo(ctx)
    clock.set(NOW)
    await run_polls(ctx)
    return ctx, areas
