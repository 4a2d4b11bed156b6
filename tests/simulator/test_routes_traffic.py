"""Traffic metrics through HTTP: keys, sums, validation, late data, window aggregation, scale."""

from __future__ import annotations

from typing import Any

import pytest

from exporter.simulator import SimConfig, Simulator
from exporter.support.clock import FakeClock
from tests.simulator.simhelpers import T0, TOKEN, Client, ClientFactory, iso

CODES = (
    "200",
    "204",
    "206",
    "2xx",
    "301",
    "302",
    "304",
    "3xx",
    "400",
    "401",
    "403",
    "404",
    "416",
    "429",
    "4xx",
    "500",
    "501",
    "502",
    "503",
    "504",
    "505",
    "5xx",
)
RANGES = ("0_250k", "250k_500k", "500k_750k", "750k_1m", "1m_2m", "2m_3m", "3m_4m", "4M+")
PERIOD = "Period between start and end must be between 1 and 10 minutes"
M = T0 - 600  # 16:50, long final when the clock reads 17:00:30


async def get(client: Client, path: str, **params: Any) -> tuple[int, Any]:
    query: dict[str, Any] = {"account": "demo-media", **params}
    for k in ("start", "end"):
        if isinstance(query.get(k), int):
            query[k] = iso(query[k])
    resp = await client.get(path, params=query)
    return resp.status, await resp.json()


async def test_totals_reply_has_every_metric_key_and_echoes_the_window(
    client: Client,
) -> None:
    status, body = await get(client, "/app/metrics/v1/", start=M, end=M + 60)
    assert status == 200
    assert body["start"] == "2026-01-01T16:50:00"
    assert body["end"] == "2026-01-01T16:51:00"
    assert body["account"] == "demo-media"
    (row,) = body["data"]
    expected = {
        "edge_bandwidth",
        "origin_bandwidth",
        "edge_requests_total",
        "origin_requests_total",
        "edge_hit_ratio",
        "edge_hit_bytes",
    }
    expected |= {f"{s}_status_{c}" for s in ("edge", "origin") for c in CODES}
    expected |= {f"{s}_request_time_{r}" for s in ("edge", "origin") for r in RANGES}
    assert set(row) == expected
    assert body["metrics"] == list(row)
    for side in ("edge", "origin"):
        classes = [row[f"{side}_status_{c}xx"] for c in "2345"]
        assert row[f"{side}_requests_total"] == sum(classes)
        assert row[f"{side}_status_2xx"] >= sum(row[f"{side}_status_{c}"] for c in (200, 204, 206))
        assert row[f"{side}_status_5xx"] >= sum(row[f"{side}_status_{c}"] for c in range(500, 506))
        assert all(isinstance(row[f"{side}_status_{c}"], int) for c in CODES)
    assert 0 < row["edge_hit_ratio"] < 1
    assert 0 < row["edge_request_time_0_250k"] < row["edge_request_time_4M+"]


async def test_account_totals_equal_the_sum_over_resources(client: Client, sim: Simulator) -> None:
    _, totals = await get(client, "/app/metrics/v1/", start=M, end=M + 60)
    _, per = await get(client, "/app/metrics/v1/resources", start=M, end=M + 60)
    total = totals["data"][0]
    rows = per["data"]
    assert [r["resource"] for r in rows] == [r.id for r in sim.resources("demo-media")]
    assert {r["cname"] for r in rows} == {r.cname for r in sim.resources("demo-media")}
    for key, value in total.items():
        if "status" in key or key.endswith(("requests_total", "hit_bytes")):
            assert value == sum(r[key] for r in rows), key
        elif key.endswith("bandwidth"):
            assert value == pytest.approx(sum(r[key] for r in rows))
    hit = sum(r["edge_hit_bytes"] for r in rows)
    edge_bytes = sum(r["edge_bandwidth"] * 60 / 8 for r in rows)
    assert total["edge_hit_ratio"] == pytest.approx(hit / edge_bytes, abs=1e-4)
    weights = [r["edge_status_2xx"] for r in rows]
    median = sum(r["edge_request_time_1m_2m"] * w for r, w in zip(rows, weights, strict=True))
    assert total["edge_request_time_1m_2m"] == pytest.approx(median / sum(weights), abs=1e-4)
    assert total == sim.traffic_final("demo-media", M)


async def test_metric_filter_repeats_and_accepts_families(client: Client) -> None:
    resp = await client.get(
        "/app/metrics/v1/",
        params=[
            ("account", "demo-media"),
            ("start", iso(M)),
            ("end", iso(M + 60)),
            ("metric", "edge_status_404"),
            ("metric", "origin_request_time"),
        ],
    )
    body = await resp.json()
    assert body["metrics"] == ["edge_status_404"] + [f"origin_request_time_{r}" for r in RANGES]
    assert set(body["data"][0]) == set(body["metrics"])


async def test_resource_filter_limits_the_reply(client: Client, sim: Simulator) -> None:
    res = sim.resources("demo-media")[2]
    _, per = await get(client, "/app/metrics/v1/resources", start=M, end=M + 60, resource=res.id)
    assert [r["resource"] for r in per["data"]] == [res.id]
    assert per["data"][0]["resource_name"] == res.name
    _, one = await get(client, "/app/metrics/v1/", start=M, end=M + 60, resource=res.id)
    assert one["data"][0] == sim.traffic_final("demo-media", M, res.id)


async def test_nested_request_time_format(aiohttp_client: ClientFactory, clock: FakeClock) -> None:
    sim = Simulator(SimConfig(request_time_format="nested"), clock)
    client = await aiohttp_client(sim.build_app(), headers=TOKEN)
    _, body = await get(client, "/app/metrics/v1/resources", start=M, end=M + 60)
    row = body["data"][0]
    assert set(row["edge_request_time"]) == set(RANGES)
    assert "edge_request_time_0_250k" not in row
    assert "edge_request_time" in body["metrics"]
    final = sim.traffic_final("demo-media", M, row["resource"])
    assert row["origin_request_time"]["4M+"] == final["origin_request_time_4M+"]


@pytest.mark.parametrize(
    ("params", "description"),
    [
        (
            {"start": "2026-01-01T16:50:30", "end": "2026-01-01T16:51:00"},
            "Invalid time format. Time must be at minute precision",
        ),
        (
            {"start": "2026-01-01T16:50:00", "end": "2026-01-01T16:51:01"},
            "Invalid time format. Time must be at minute precision",
        ),
        ({"start": M, "end": M}, PERIOD),
        ({"start": M, "end": M + 660}, PERIOD),
        ({"start": M + 60, "end": M}, PERIOD),
        ({"end": M + 60}, "Missing required parameter: start"),
        ({"start": M}, "Missing required parameter: end"),
        (
            {"start": "yesterday", "end": M},
            "Invalid time format in 'start'. Expected YYYY-MM-DDThh:mm:00",
        ),
        ({"start": M, "end": M + 60, "metric": "edge_nonsense"}, "Unknown metric: edge_nonsense"),
    ],
)
async def test_invalid_queries_get_422_with_the_metrics_error_shape(
    client: Client, params: dict[str, Any], description: str
) -> None:
    for path in ("/app/metrics/v1/", "/app/metrics/v1/resources"):
        status, body = await get(client, path, **params)
        assert (status, body) == (422, {"status": "error", "description": description})


async def test_missing_account_is_422(client: Client) -> None:
    resp = await client.get("/app/metrics/v1/", params={"start": iso(M), "end": iso(M + 60)})
    assert resp.status == 422
    assert await resp.json() == {
        "status": "error",
        "description": "Missing required parameter: account",
    }


async def test_unknown_account_is_403_no_access(client: Client) -> None:
    resp = await client.get(
        "/app/metrics/v1/", params={"account": "acme", "start": iso(M), "end": iso(M + 60)}
    )
    assert resp.status == 403
    assert await resp.json() == {"status": "error", "description": "Invalid token or no access"}


async def test_max_window_one_minute_emulates_the_newer_docs(
    aiohttp_client: ClientFactory, clock: FakeClock
) -> None:
    sim = Simulator(SimConfig(max_window_minutes=1), clock)
    client = await aiohttp_client(sim.build_app(), headers=TOKEN)
    status, body = await get(client, "/app/metrics/v1/", start=M, end=M + 120)
    assert (status, body) == (
        422,
        {"status": "error", "description": "Period between start and end must be 1 minute"},
    )
    status, _ = await get(client, "/app/metrics/v1/", start=M, end=M + 60)
    assert status == 200


async def test_window_aggregates_minutes(client: Client, sim: Simulator) -> None:
    finals = [sim.traffic_final("demo-media", M + 60 * i) for i in range(3)]
    _, body = await get(client, "/app/metrics/v1/", start=M, end=M + 180)
    w = body["data"][0]
    assert w["edge_requests_total"] == sum(f["edge_requests_total"] for f in finals)
    assert w["origin_status_304"] == sum(f["origin_status_304"] for f in finals)
    assert w["edge_hit_bytes"] == sum(f["edge_hit_bytes"] for f in finals)
    mean_bw = sum(f["edge_bandwidth"] for f in finals) / 3
    assert w["edge_bandwidth"] == pytest.approx(mean_bw, abs=0.01)
    edge_bytes = sum(f["edge_bandwidth"] * 7.5 for f in finals)
    assert w["edge_hit_ratio"] == pytest.approx(
        sum(f["edge_hit_bytes"] for f in finals) / edge_bytes, abs=1e-4
    )
    weights = [f["edge_status_2xx"] for f in finals]
    med = sum(f["edge_request_time_0_250k"] * x for f, x in zip(finals, weights, strict=True))
    assert w["edge_request_time_0_250k"] == pytest.approx(med / sum(weights), abs=1e-4)


async def test_late_minute_rises_to_its_final_figures(
    client: Client, sim: Simulator, clock: FakeClock
) -> None:
    minute = T0 + 60  # 17:01, opens 30 s from now
    final = sim.traffic_final("demo-media", minute)
    seen = []
    for at in (minute - 30, minute + 30, minute + 60, minute + 90, minute + 120, minute + 150):
        clock.set(at)
        _, body = await get(client, "/app/metrics/v1/", start=minute, end=minute + 60)
        seen.append(body["data"][0])
    before, open_, closed, later, nearly, done = seen
    assert before["edge_requests_total"] == 0
    assert before["edge_bandwidth"] == 0
    assert 0 < open_["edge_requests_total"] < closed["edge_requests_total"]
    assert closed["edge_requests_total"] == pytest.approx(0.7 * final["edge_requests_total"], 0.01)
    totals = [s["edge_requests_total"] for s in seen]
    assert totals == sorted(totals)
    assert later["edge_requests_total"] < final["edge_requests_total"]
    assert later["edge_hit_bytes"] < final["edge_hit_bytes"]
    assert later["edge_bandwidth"] < final["edge_bandwidth"]
    assert later["edge_hit_ratio"] == final["edge_hit_ratio"]
    assert later["origin_request_time_2m_3m"] == final["origin_request_time_2m_3m"]
    assert nearly["edge_requests_total"] <= final["edge_requests_total"]
    assert done == final  # late_seconds (90) after the close
    _, per = await get(client, "/app/metrics/v1/resources", start=minute, end=minute + 60)
    assert per["data"][0] == {
        "cname": per["data"][0]["cname"],
        "resource": per["data"][0]["resource"],
        "resource_name": per["data"][0]["resource_name"],
        **sim.traffic_final("demo-media", minute, per["data"][0]["resource"]),
    }


async def test_partial_account_totals_still_sum_over_resources(
    client: Client, clock: FakeClock
) -> None:
    clock.set(T0 + 60 + 20)  # 17:00 closed 20 s ago
    _, totals = await get(client, "/app/metrics/v1/", start=T0, end=T0 + 60)
    _, per = await get(client, "/app/metrics/v1/resources", start=T0, end=T0 + 60)
    for key in ("edge_requests_total", "edge_status_5xx", "origin_status_200", "edge_hit_bytes"):
        assert totals["data"][0][key] == sum(r[key] for r in per["data"]), key


def test_figures_are_deterministic_per_seed_and_follow_a_daily_curve(clock: FakeClock) -> None:
    a, b = Simulator(SimConfig(), clock), Simulator(SimConfig(), clock)
    other = Simulator(SimConfig(seed=2), clock)
    assert a.traffic_final("demo-shop", M) == b.traffic_final("demo-shop", M)
    assert a.traffic_final("demo-shop", M) != other.traffic_final("demo-shop", M)
    night = a.traffic_final("demo-media", T0 - 13 * 3600)["edge_requests_total"]  # 04:00
    evening = a.traffic_final("demo-media", T0 + 3600)["edge_requests_total"]  # 18:00
    assert evening > 2 * night


def test_error_bursts_happen_now_and_then(clock: FakeClock) -> None:
    sim = Simulator(SimConfig(), clock)
    res = sim.resources("demo-media")[0].id
    shares = []
    for i in range(24 * 60):
        f = sim.traffic_final("demo-media", T0 - 86400 + 60 * i, res)
        shares.append(f["edge_status_5xx"] / max(1, f["edge_requests_total"]))
    bursty = [s for s in shares if s > 0.03]
    assert 0 < len(bursty) < 0.2 * len(shares)
    assert sorted(shares)[len(shares) // 2] < 0.01


async def test_large_data_set_answers_a_per_resource_request(
    aiohttp_client: ClientFactory, clock: FakeClock
) -> None:
    config = SimConfig(
        resources_per_account=1000, restreams_per_account=200, dvr_streams_per_account=100
    )
    sim = Simulator(config, clock)
    client = await aiohttp_client(sim.build_app(), headers=TOKEN)
    status, body = await get(client, "/app/metrics/v1/resources", start=M, end=M + 60)
    assert status == 200
    assert len(body["data"]) == 1000
    assert len({r["resource"] for r in body["data"]}) == 1000
    _, totals = await get(client, "/app/metrics/v1/", start=M, end=M + 60)
    assert totals["data"][0]["edge_requests_total"] == sum(
        r["edge_requests_total"] for r in body["data"]
    )
    resp = await client.get("/app/restream/v2/demo-shop/resources")
    assert len((await resp.json())["data"]["resources"]) == 200
    resp = await client.get("/app/dvr-net/v1/demo-shop/streams/live/ch-100")
    assert (await resp.json())["stream_name"] == "live/ch-100"


def test_late_half_seconds_shapes_how_late_figures_arrive() -> None:
    """late_seconds 1200 with half 60: figures rise for 20 minutes, most in the first 2."""
    sim = Simulator(SimConfig(late_seconds=1200, late_half_seconds=60), FakeClock(T0))
    m = T0 - T0 % 60
    close = m + 60
    assert sim.late_fraction(m, close) == pytest.approx(0.7)
    assert sim.late_fraction(m, close + 60) == pytest.approx(0.85)  # half of the late 30%
    assert 0.92 < sim.late_fraction(m, close + 120) < 0.93  # three quarters within 2 minutes
    assert sim.late_fraction(m, close + 600) < 1.0
    assert sim.late_fraction(m, close + 1200) == 1.0
    default = Simulator(SimConfig(late_seconds=1200), FakeClock(T0))
    assert default.late_fraction(m, close + 120) == pytest.approx(1 - 0.3 * 0.9**2)
    with pytest.raises(ValueError, match="late_half_seconds"):
        SimConfig(late_seconds=60, late_half_seconds=60)
