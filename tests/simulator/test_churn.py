"""Resources added, renamed and deleted (quirk resource-churn), seen through HTTP."""

from __future__ import annotations

from typing import Any

from exporter.simulator import SimConfig, Simulator
from exporter.simulator.churn import CHURN_SECONDS
from exporter.support.clock import FakeClock
from tests.simulator.simhelpers import T0, TOKEN, Client, ClientFactory, iso

ACCOUNT = "demo-media"


async def _rows(client: Client, start: int, minutes: int = 1) -> dict[str, dict[str, Any]]:
    resp = await client.get(
        "/app/metrics/v1/resources",
        params={"account": ACCOUNT, "start": iso(start), "end": iso(start + 60 * minutes)},
    )
    assert resp.status == 200
    return {row["resource"]: row for row in (await resp.json())["data"]}


async def _total(client: Client, start: int) -> float:
    resp = await client.get(
        "/app/metrics/v1/", params={"account": ACCOUNT, "start": iso(start), "end": iso(start + 60)}
    )
    (row,) = (await resp.json())["data"]
    return float(row["edge_requests_total"])


async def test_a_resource_added_has_traffic_from_the_next_minute(
    aiohttp_client: ClientFactory,
) -> None:
    clock = FakeClock(T0 + 30)  # 17:00:30
    sim = Simulator(SimConfig(resources_per_account=2), clock)
    client = await aiohttp_client(sim.build_app(), headers=TOKEN)
    new = sim.add_resource(ACCOUNT)  # from 17:01
    clock.set(T0 + 3600)
    before = await _rows(client, T0)
    after = await _rows(client, T0 + 60)
    assert sorted(before) == ["100001", "100002"]
    assert sorted(after) == ["100001", "100002", new.id]
    assert after[new.id]["resource_name"] == new.name
    assert after[new.id]["edge_requests_total"] > 0
    both = await _rows(client, T0, 2)  # a window holding one minute of its life names it
    assert both[new.id]["edge_requests_total"] == after[new.id]["edge_requests_total"]
    assert await _total(client, T0 + 60) == sum(r["edge_requests_total"] for r in after.values())


async def test_a_resource_deleted_keeps_its_minutes_before_and_has_none_after(
    aiohttp_client: ClientFactory,
) -> None:
    clock = FakeClock(T0 + 30)
    sim = Simulator(SimConfig(resources_per_account=3), clock)
    client = await aiohttp_client(sim.build_app(), headers=TOKEN)
    clock.set(T0 + 3600)
    kept = await _rows(client, T0)
    clock.set(T0 + 30)
    sim.delete_resource(ACCOUNT, "100002")  # from 17:01
    clock.set(T0 + 3600)
    assert await _rows(client, T0) == kept
    after = await _rows(client, T0 + 60)
    assert sorted(after) == ["100001", "100003"]
    assert await _total(client, T0 + 60) == sum(r["edge_requests_total"] for r in after.values())


async def test_a_resource_renamed_keeps_its_id_and_figures(aiohttp_client: ClientFactory) -> None:
    clock = FakeClock(T0 + 3600)
    sim = Simulator(SimConfig(resources_per_account=2), clock)
    client = await aiohttp_client(sim.build_app(), headers=TOKEN)
    before = await _rows(client, T0)
    sim.rename_resource(ACCOUNT, "100001", "renamed")
    after = await _rows(client, T0)
    assert after["100001"]["resource_name"] == "renamed"
    assert after["100001"]["cname"] == before["100001"]["cname"]
    assert after["100001"]["edge_requests_total"] == before["100001"]["edge_requests_total"]


async def test_quirk_resource_churn_changes_the_list_on_its_own_the_same_way_each_time(
    aiohttp_client: ClientFactory,
) -> None:
    """Changes every 20 minutes, the same whichever moments the figures are asked for."""
    logs = []
    for asks in ((3,), (1, 2, 3)):
        clock = FakeClock(T0)
        sim = Simulator(
            SimConfig(resources_per_account=2, quirks=frozenset({"resource-churn"})), clock
        )
        client = await aiohttp_client(sim.build_app(), headers=TOKEN)
        for n in asks:
            clock.set(T0 + n * CHURN_SECONDS + 90)
            await _rows(client, T0 + n * CHURN_SECONDS)
        logs.append(sim.churn_log)
    assert logs[0] == logs[1]
    assert [c.at for c in logs[0]] == [T0 + k * CHURN_SECONDS for k in (1, 2, 3)]
    assert {c.kind for c in logs[0]} <= {"add", "rename", "delete"}


async def test_quirk_drop_deleted_resources_leaves_a_deleted_resource_out_of_its_own_minutes(
    aiohttp_client: ClientFactory,
) -> None:
    """Deleted at 17:02 (after its minute 17:00 closed, before that minute's late data all
    came): per-resource replies name it until then and never after, even for 17:00; the
    account totals keep its minute, late data included."""
    clock = FakeClock(T0 + 90)
    sim = Simulator(
        SimConfig(
            resources_per_account=2,
            late_seconds=600,
            quirks=frozenset({"drop-deleted-resources"}),
        ),
        clock,
    )
    client = await aiohttp_client(sim.build_app(), headers=TOKEN)
    early = await _rows(client, T0)
    assert sorted(early) == ["100001", "100002"]
    sim.delete_resource(ACCOUNT, "100002")  # from 17:02
    assert sorted(await _rows(client, T0)) == ["100001", "100002"]  # not deleted yet
    clock.set(T0 + 3600)
    late = await _rows(client, T0)
    assert sorted(late) == ["100001"]
    assert sorted(await _rows(client, T0, 3)) == ["100001"]
    final = sim.traffic_final(ACCOUNT, T0)
    assert await _total(client, T0) == final["edge_requests_total"]
    gone = sim.traffic_final(ACCOUNT, T0, "100002")["edge_requests_total"]
    assert gone > early["100002"]["edge_requests_total"] > 0
    assert late["100001"]["edge_requests_total"] == final["edge_requests_total"] - gone
