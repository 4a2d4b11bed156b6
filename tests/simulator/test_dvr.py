"""Network DVR over HTTP: per-node records, growth, deletions to the second, node faults."""

from __future__ import annotations

from typing import Any

import pytest

from exporter.simulator import Simulator
from exporter.support.clock import FakeClock
from tests.simulator.simhelpers import Client

MAIN = "/app/dvr-net/v1/demo-media/streams/live/main"
HOSTS = ["dvr-msk-1", "dvr-msk-2", "dvr-spb-1"]


async def records(client: Client, path: str = MAIN) -> dict[str, dict[str, Any]]:
    resp = await client.get(path)
    assert resp.status == 200
    body = await resp.json()
    assert body["status"] == "Completed"
    return {r["host"]: r for r in body["data"]}


def spans(record: dict[str, Any]) -> list[tuple[int, int]]:
    return [(r["from"], r["from"] + r["duration"]) for r in record["dvr"]["ranges"]]


async def delete(client: Client, body: dict[str, Any], path: str = MAIN) -> tuple[int, Any]:
    resp = await client.request("DELETE", path, json=body)
    return resp.status, await resp.json()


async def test_records_one_per_node_with_consistent_totals(
    client: Client, clock: FakeClock
) -> None:
    resp = await client.get(MAIN)
    body = await resp.json()
    assert body["stream_name"] == "live/main"
    assert [r["host"] for r in body["data"]] == HOSTS
    now = int(clock.time())
    for record in body["data"]:
        assert record["stream_name"] == "live/main"
        assert record["is_alive"] is True
        dvr = record["dvr"]
        assert dvr["enabled"] is True
        assert dvr["window"] == 14400
        assert dvr["duration"] == sum(r["duration"] for r in dvr["ranges"])
        assert dvr["from"] == dvr["ranges"][0]["from"]
        assert dvr["from"] >= now - 14400
        assert spans(record)[-1][1] == now
    news = await records(client, "/app/dvr-net/v1/demo-media/streams/news")
    assert list(news) == ["dvr-msk-1", "dvr-spb-1"]
    assert len(news["dvr-msk-1"]["dvr"]["ranges"]) >= 3  # on air part of each hour


async def test_slash_in_stream_name_may_be_encoded(client: Client) -> None:
    plain = await (await client.get(MAIN)).json()
    encoded = await (await client.get("/app/dvr-net/v1/demo-media/streams/live%2Fmain")).json()
    assert plain == encoded


async def test_live_ranges_grow_and_the_full_window_slides(
    client: Client, clock: FakeClock
) -> None:
    before = (await records(client))["dvr-msk-1"]
    clock.advance(60)
    after = (await records(client))["dvr-msk-1"]
    assert spans(after)[-1][1] == spans(before)[-1][1] + 60
    # the 4-hour window is full: what ends now started 4 hours ago, so the start moves too
    assert before["dvr"]["from"] == int(clock.time()) - 60 - 14400
    assert after["dvr"]["from"] == before["dvr"]["from"] + 60


async def test_delete_range_splits_a_range_to_the_second(client: Client) -> None:
    before = await records(client)
    a, b = spans(before["dvr-msk-1"])[0]
    cut = a + (b - a) // 3
    status, body = await delete(client, {"host": "dvr-msk-1", "from_ts": cut, "duration_sec": 100})
    assert status == 200
    assert body == {
        "status": "Completed",
        "stream_name": "live/main",
        "duration_sec": 100,
        "from_ts": cut,
        "host": "dvr-msk-1",
    }
    after = await records(client)
    assert spans(after["dvr-msk-1"])[:2] == [(a, cut), (cut + 100, b)]
    assert after["dvr-msk-1"]["dvr"]["duration"] == before["dvr-msk-1"]["dvr"]["duration"] - 100
    assert after["dvr-msk-2"] == before["dvr-msk-2"]


async def test_delete_with_to_ts_on_every_node(client: Client) -> None:
    before = await records(client)
    a, _ = spans(before["dvr-spb-1"])[0]
    status, body = await delete(client, {"host": "*", "from_ts": a + 10, "to_ts": a + 70})
    assert status == 200
    assert body == {
        "status": "Completed",
        "stream_name": "live/main",
        "to_ts": a + 70,
        "from_ts": a + 10,
        "host": "*",
    }
    after = await records(client)
    for host in HOSTS:
        assert after[host]["dvr"]["duration"] == before[host]["dvr"]["duration"] - 60
        assert (a + 10, a + 70) not in spans(after[host])


async def test_delete_trims_the_start_and_tolerates_bounds_outside(client: Client) -> None:
    before = await records(client)
    a, b = spans(before["dvr-msk-1"])[0]
    status, _ = await delete(client, {"host": "dvr-msk-1", "from_ts": a - 5000, "to_ts": a + 30})
    assert status == 200
    after = await records(client)
    assert spans(after["dvr-msk-1"])[0] == (a + 30, b)
    assert after["dvr-msk-1"]["dvr"]["from"] == a + 30
    status, _ = await delete(client, {"host": "*", "from_ts": 1000, "duration_sec": 60})
    assert status == 200
    assert await records(client) == after


async def test_delete_all_empties_then_the_live_archive_accumulates_again(
    client: Client, clock: FakeClock
) -> None:
    status, body = await delete(client, {"host": "dvr-msk-2", "all": True})
    assert status == 200
    assert body == {
        "status": "Completed",
        "stream_name": "live/main",
        "host": "dvr-msk-2",
        "all": True,
    }
    emptied = (await records(client))["dvr-msk-2"]["dvr"]
    assert emptied["ranges"] == []
    assert emptied["duration"] == 0
    assert emptied["from"] == 0
    now = int(clock.time())
    clock.advance(45)
    grown = (await records(client))["dvr-msk-2"]["dvr"]
    assert grown["ranges"] == [{"duration": 45, "from": now}]


@pytest.mark.parametrize(
    ("body", "description"),
    [
        (
            {"host": "*", "from_ts": 1, "duration_sec": 5, "to_ts": 9},
            "Exactly one of 'duration_sec' or 'to_ts' is required",
        ),
        ({"host": "*", "from_ts": 1}, "Exactly one of 'duration_sec' or 'to_ts' is required"),
        ({"from_ts": 1, "to_ts": 9}, "Field 'host' is required (a node identifier or '*')"),
        ({"host": "*", "to_ts": 9}, "Field 'from_ts' is required (or 'all': true)"),
        ({"host": "*", "from_ts": "1", "to_ts": 9}, "Field 'from_ts' must be an integer"),
        ({"host": "*", "from_ts": 10, "to_ts": 9}, "Field 'to_ts' must give an end after from_ts"),
        ({"host": "*", "all": False}, "Field 'all' must be true"),
        ([1, 2], "Request body must be a JSON object"),
    ],
)
async def test_invalid_delete_bodies_are_400(client: Client, body: Any, description: str) -> None:
    status, reply = await delete(client, body)
    assert (status, reply) == (400, {"status": "Bad Request", "description": description})


async def test_failing_node_makes_deletion_500_with_failed_hosts(
    client: Client, anon: Client
) -> None:
    resp = await anon.post("/_sim/dvr/nodes/dvr-msk-2", json={"failing": True})
    assert (await resp.json())["failing"] is True
    before = await records(client)
    a, _ = spans(before["dvr-msk-1"])[0]
    status, body = await delete(client, {"host": "*", "from_ts": a, "duration_sec": 20})
    assert status == 500
    assert body == {
        "status": "Internal Server Error",
        "description": "Deletion failed on 1 of 3 host(s)",
        "failed_hosts": ["dvr-msk-2"],
    }
    after = await records(client)
    assert after["dvr-msk-2"] == before["dvr-msk-2"]
    assert after["dvr-msk-1"]["dvr"]["duration"] == before["dvr-msk-1"]["dvr"]["duration"] - 20
    status, body = await delete(client, {"host": "dvr-msk-2", "all": True})
    assert status == 500
    assert body["failed_hosts"] == ["dvr-msk-2"]


async def test_dead_node_stops_recording_and_recovers(
    client: Client, sim: Simulator, clock: FakeClock
) -> None:
    died = int(clock.time())
    sim.dvr.set_node("dvr-spb-1", alive=False)
    clock.advance(120)
    now = await records(client)
    assert now["dvr-spb-1"]["is_alive"] is False
    assert spans(now["dvr-spb-1"])[-1][1] == died
    assert now["dvr-msk-1"]["is_alive"] is True
    sim.dvr.set_node("dvr-spb-1", alive=True)
    clock.advance(60)
    later = await records(client)
    assert later["dvr-spb-1"]["is_alive"] is True
    assert spans(later["dvr-spb-1"])[-2:] == [
        (spans(later["dvr-spb-1"])[-2][0], died),
        (died + 120, died + 180),
    ]


async def test_hidden_node_disappears_from_replies(client: Client, sim: Simulator) -> None:
    sim.dvr.set_node("dvr-msk-1", hidden=True)
    assert list(await records(client)) == ["dvr-msk-2", "dvr-spb-1"]
    status, body = await delete(client, {"host": "dvr-msk-1", "all": True})
    assert (status, body) == (
        404,
        {"status": "Not Found", "description": "Host dvr-msk-1 does not hold stream live/main"},
    )
    sim.reset()
    assert list(await records(client)) == HOSTS


async def test_unknown_stream_and_account_are_404(client: Client) -> None:
    resp = await client.get("/app/dvr-net/v1/demo-media/streams/live/other")
    assert resp.status == 404
    assert await resp.json() == {"status": "Not Found", "description": "Stream not found"}
    resp = await client.get("/app/dvr-net/v1/acme/streams/live/main")
    assert await resp.json() == {"status": "Not Found", "description": "Account not found"}
