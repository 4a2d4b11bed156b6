"""The request budget per account and backing off on the platform's rate-limit answers."""

from __future__ import annotations

import pytest
from structlog.testing import capture_logs

from exporter.dvr.reply import DvrReader
from exporter.runtime.selfmetrics import SelfMetrics
from exporter.support.clock import FakeClock
from exporter.upstream.budget import (
    DEFAULT_PAUSE_SECONDS,
    RECOVERY_STEP_SECONDS,
    Postponed,
    RequestBudget,
)
from tests.rig.client import DVR_MAIN, MakeShapeRig


def takes(budget: RequestBudget, account: str, area: str) -> int:
    """How many requests of ``area`` the budget lets through now."""
    n = 0
    while True:
        try:
            budget.take(account, area)
        except Postponed:
            return n
        n += 1


def test_one_budget_per_account_with_a_reserve_for_traffic() -> None:
    clock = FakeClock(1000.0)
    metrics = SelfMetrics()
    budget = RequestBudget(8, clock, metrics)
    assert takes(budget, "a", "dvr") == 6  # a quarter is left to traffic
    assert takes(budget, "a", "traffic") == 2
    assert takes(budget, "b", "traffic") == 8  # another account has its own budget
    clock.advance(30)
    assert takes(budget, "a", "traffic") == 0  # never more than 8 in any 60 s
    assert budget.in_use("a") == 8
    assert (
        metrics.registry.get_sample_value(
            "cdnvideo_upstream_budget_requests_per_minute", {"account": "a"}
        )
        == 8
    )
    assert (
        metrics.registry.get_sample_value(
            "cdnvideo_upstream_budget_limit_per_minute", {"account": "a"}
        )
        == 8
    )
    clock.advance(30)
    assert budget.in_use("a") == 0
    assert budget.affords("a", "dvr", 100)  # a poll larger than the budget starts when idle
    assert budget.affords("a", "dvr", 6)
    assert takes(budget, "a", "restream") == 6
    assert not budget.affords("a", "dvr", 1)
    assert budget.affords("a", "traffic", 2)


def test_no_limit_takes_everything_and_reports_0_as_the_config_does() -> None:
    clock = FakeClock(1000.0)
    metrics = SelfMetrics()
    budget = RequestBudget(0, clock, metrics)
    for _ in range(500):
        budget.take("a", "dvr")
    assert budget.limit("a") is None
    assert (
        metrics.registry.get_sample_value(
            "cdnvideo_upstream_budget_limit_per_minute", {"account": "a"}
        )
        == 0
    )


def test_rate_limit_pauses_then_recovers_gradually() -> None:
    clock = FakeClock(1000.0)
    metrics = SelfMetrics()
    budget = RequestBudget(0, clock, metrics)  # no configured limit: back-off applies anyway
    for _ in range(40):
        budget.take("a", "restream")
    with capture_logs() as logs:
        budget.signal("a", "restream", retry_after=20)
        budget.signal("a", "restream", retry_after=20)
    assert [e["event"] for e in logs] == ["upstream_rate_limited"]  # one line a minute
    assert (
        metrics.registry.get_sample_value(
            "cdnvideo_upstream_rate_limited_total", {"area": "restream"}
        )
        == 2
    )
    assert budget.limit("a") == 0
    with pytest.raises(Postponed, match="backing off after a rate limit"):
        budget.take("a", "traffic")  # paused: even traffic waits
    clock.advance(20)
    assert budget.limit("a") == 20  # half of the 40 sent in the minute before
    assert takes(budget, "a", "traffic") == 0  # the 40 are still within the last 60 s
    clock.advance(40)
    assert takes(budget, "a", "traffic") == 20
    limits = []
    for _ in range(4):
        clock.advance(RECOVERY_STEP_SECONDS)
        limits.append(budget.limit("a"))
    assert limits == [30, 45, 67.5, None]  # up by half every minute, then no limit again


def test_configured_limit_comes_back_after_a_pause_without_retry_after() -> None:
    clock = FakeClock(1000.0)
    budget = RequestBudget(10, clock)
    assert takes(budget, "a", "traffic") == 10
    budget.signal("a", "traffic", retry_after=None)
    clock.advance(DEFAULT_PAUSE_SECONDS - 1)
    assert budget.limit("a") == 0
    clock.advance(1)
    assert budget.limit("a") == 5
    clock.advance(2 * RECOVERY_STEP_SECONDS)
    assert budget.limit("a") == 10


@pytest.mark.parametrize(
    ("quirk", "pause"),
    [((), 60.0), (("rate-limit-420",), DEFAULT_PAUSE_SECONDS), (("rate-limit-200",), 30.0)],
)
async def test_platform_rate_limit_backs_the_account_off(
    make_sim_rig: MakeShapeRig, quirk: tuple[str, ...], pause: float
) -> None:
    r = await make_sim_rig(quirk, login=False, api_requests_per_minute=4)
    for _ in range(4):
        await DvrReader(r.client).dvr_stream("demo-media", "live/main")
    with pytest.raises(Exception, match="Rate limit exceeded"):
        await DvrReader(r.client).dvr_stream("demo-media", "live/main")
    assert r.sample("cdnvideo_upstream_rate_limited_total", area="dvr") == 1
    sent = len(r.sent(DVR_MAIN))
    assert sent == 5
    with pytest.raises(Postponed):  # nothing is sent while backing off
        await DvrReader(r.client).dvr_stream("demo-media", "live/main")
    assert len(r.sent(DVR_MAIN)) == sent
    assert await DvrReader(r.client).dvr_stream("demo-shop", "live/main")  # other accounts go on
    r.clock.advance(pause - 1)
    assert r.client.budget.limit("demo-media") == 0  # still paused
    r.clock.advance(1)  # Retry-After (60 s from the simulator's 429), else 30 s
    assert r.client.budget.limit("demo-media") == 2.5  # half of the 5 sent
    assert r.sample("cdnvideo_upstream_budget_limit_per_minute", account="demo-media") == 2.5
    r.clock.advance(60)  # a minute at 2.5 a minute refills the bucket
    assert await DvrReader(r.client).dvr_stream("demo-media", "live/main")
    assert r.sample("cdnvideo_upstream_rate_limited_total", area="dvr") == 1


@pytest.mark.parametrize("step", [-7200.0, -1200.0, 3600.0])
def test_a_host_clock_step_never_silences_nor_frees_the_budget(step: float) -> None:
    """The budget counts on the monotonic clock: a wall clock stepped back 2 h or 20 min does
    not hold the requests sent before it "in the last minute" for the length of the step,
    nor does a step ahead free them before 60 s have passed."""
    clock = FakeClock(1000.0)
    budget = RequestBudget(3, clock)
    assert takes(budget, "a", "traffic") == 3
    clock.step(step)
    assert budget.in_use("a") == 3
    assert takes(budget, "a", "traffic") == 0  # still within the same 60 s
    clock.advance(60)
    assert budget.in_use("a") == 0
    assert budget.limit("a") == 3
    assert takes(budget, "a", "traffic") == 3
    budget.signal("a", "traffic", retry_after=30)
    clock.step(-step)
    assert budget.paused("a")  # the pause lasts 30 s of elapsed time, whatever the step
    clock.advance(30)
    assert not budget.paused("a")


def test_frees_in_names_the_instant_the_budget_affords_a_read_again() -> None:
    clock = FakeClock(1000.0)
    budget = RequestBudget(3, clock)
    assert budget.frees_in("a", "traffic", 2) == 0.0  # nothing sent: now
    budget.take("a", "traffic")
    budget.take("a", "traffic")  # a first read's pair at 1000
    clock.advance(20)
    budget.take("a", "traffic")  # a settle half at 1020
    assert budget.frees_in("a", "traffic", 1) == pytest.approx(40.0, abs=0.01)  # the pair leaves
    assert budget.frees_in("a", "traffic", 2) == pytest.approx(40.0, abs=0.01)
    assert budget.frees_in("a", "traffic", 3) == pytest.approx(60.0, abs=0.01)  # and the half
    clock.advance(budget.frees_in("a", "traffic", 2) or 0.0)
    assert budget.affords("a", "traffic", 2)  # at that instant, not a tick later
    assert not budget.affords("a", "traffic", 3)
    budget.signal("a", "traffic", retry_after=30.0)
    assert budget.frees_in("a", "traffic", 1) is None  # a pause: its own retry decides
