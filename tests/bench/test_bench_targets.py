"""The targets table and the linear fit behind the growth plot (pure functions, no timing)."""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import pytest

from bench.measure import paired_ratio, side_by_side
from bench.report import linear_fit
from bench.scale import Result
from bench.targets import TARGETS, verdicts


def result(resources: int, **figures: Any) -> Result:
    base = Result(resources, resources // 5, resources // 10, series=resources * 117)
    good = {
        "stall_healthz_ms": 30.0,
        "stall_probe_ms": 30.0,
        "slice_ms": 10.0,
        "refresh_s": 1.0,
        "rss_mb": 100.0,
        "peak_rss_mb": 105.0,
        "cpu_s_per_min": 0.9,  # 1.5% of a core
        "exporter_p50_ms": 1.0,
        "static_p50_ms": 1.0,
    }
    return dataclasses.replace(base, **{**good, **figures})


def by_target(res: Result) -> dict[str, bool | None]:
    return {v.target: v.met for v in verdicts([res])}


def test_every_target_met_when_every_figure_is_within() -> None:
    assert by_target(result(5000)) == {t.name: True for t in TARGETS}


@pytest.mark.parametrize(
    ("figure", "value", "target"),
    [
        ("stall_healthz_ms", 51.0, "worst loop stall, /healthz"),
        ("stall_probe_ms", 50.5, "worst loop stall, in-process probe"),
        ("slice_ms", 20.5, "longest slice on the loop"),
        ("refresh_s", 5.01, "full refresh"),
        ("rss_mb", 201.0, "RSS, steady"),
        ("peak_rss_mb", 230.0, "RSS, peak"),
        ("cpu_s_per_min", 3.1, "CPU, steady"),  # 5.2%
        ("exporter_p50_ms", 1.25, "scrape median / floor"),
    ],
)
def test_each_target_is_missed_on_its_own_figure(figure: str, value: float, target: str) -> None:
    verdict = by_target(result(5000, **{figure: value}))
    assert verdict[target] is False
    assert all(met for name, met in verdict.items() if name != target)


def test_at_1000_the_figures_from_before_are_the_limit_too() -> None:
    # 45 ms is within 50 ms but worse than the 39 ms published before (+2 ms of noise)
    verdict = by_target(result(1000, stall_healthz_ms=45.0, rss_mb=118.0))
    assert verdict["worst loop stall, /healthz"] is False
    assert verdict["RSS, steady"] is True  # 108 MB before, +10% noise
    assert by_target(result(5000, stall_healthz_ms=45.0))["worst loop stall, /healthz"] is True


def test_a_figure_not_measured_is_neither_met_nor_missed() -> None:
    assert by_target(result(25000, refresh_s=float("nan")))["full refresh"] is None


def test_linear_fit() -> None:
    a, b, r2 = linear_fit([1.0, 2.0, 3.0], [52.0, 54.0, 56.0])
    assert (a, b, r2) == pytest.approx((50.0, 2.0, 1.0))
    _, _, bent = linear_fit([1.0, 2.0, 3.0, 4.0], [1.0, 4.0, 9.0, 16.0])
    assert bent < 0.97


def test_the_floor_ratio_comes_from_pairs_when_measured() -> None:
    """A slow moment slows both scrapes of a pair: the pairs' median ratio stays 1.1 where
    the ratio of the two medians says 1.5 (the floor's slow samples fell on other rounds)."""
    exporter = [1.1, 1.1, 2.2, 2.2, 2.2]
    floor = [1.0, 1.0, 2.0, 2.0, 2.0]
    assert paired_ratio(exporter, floor) == pytest.approx(1.1)
    assert paired_ratio([], []) != paired_ratio([], [])  # NaN: not measured
    assert result(5000, paired_floor_ratio=1.1, exporter_p50_ms=1.5).floor_ratio == 1.1
    assert result(5000, exporter_p50_ms=1.5).floor_ratio == 1.5  # no pairs: the medians
    assert by_target(result(5000, paired_floor_ratio=1.25))["scrape median / floor"] is False


async def test_floor_and_exporter_scrapes_alternate_strictly() -> None:
    """Every scrape follows one of the other server (none gets the second-in-a-row bonus),
    and each exporter scrape is paired with the mean of the floor scrapes around it."""
    from aiohttp import web
    from aiohttp.test_utils import TestServer

    order: list[str] = []

    def handler(name: str) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def reply(request: web.Request) -> web.Response:
            order.append(name)
            return web.Response(body=b"x")

        return reply

    app = web.Application()
    app.router.add_get("/exp", handler("exp"))
    app.router.add_get("/static", handler("static"))
    async with TestServer(app) as server, aiohttp.ClientSession() as session:
        static: list[float] = []
        beside: list[float] = []
        exp, _ = await side_by_side(
            session, str(server.make_url("/exp")), None, 4, 1,
            static_url=str(server.make_url("/static")), static=static, beside=beside,
        )  # fmt: skip
    assert order == ["static", "exp"] * 4 + ["static"]
    assert (len(exp), len(static), len(beside)) == (4, 5, 4)
    assert beside == pytest.approx([(static[i] + static[i + 1]) / 2 for i in range(4)])
