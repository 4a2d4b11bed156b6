"""A counter series shown for the first time appears at 0 and then rises only by what was
counted after it appeared, also when the ledger held its key long before: a family a reload
includes (``metrics.include``/``exclude``), per-code series after a restart switches
``resource_status_codes`` from classes to codes, the lateness counters."""

from __future__ import annotations

from pathlib import Path

import pytest

from exporter.exposition import FamilySelection, Store
from exporter.simulator import SimConfig
from exporter.traffic import TrafficPoller, exposure
from exporter.traffic.counters import Late
from exporter.traffic.families import ACCOUNT, LATE_HIT_BYTES, LATE_REQUESTS, RESOURCE
from exporter.traffic.ledger import AccountLedger
from exporter.traffic.transform import build_fragment
from tests.traffic.test_against_simulator import ACC, Rig, ServerFactory, rig

CONFIG = SimConfig(late_seconds=90, resources_per_account=2)  # first reads final (delay 120)
LATE = SimConfig(late_seconds=240, resources_per_account=2)
HIDDEN = FamilySelection(exclude=["responses_total$", "late_(requests|hit_bytes)_total$"])


def truth(r: Rig, key: str, first: int, last: int, resource: str | None = None) -> float:
    return sum(r.sim.traffic_final(ACC, m, resource)[key] for m in range(first, last + 60, 60))


def cursor(poller: TrafficPoller) -> int:
    c = poller.accounts.ledger(ACC).cursor
    assert c is not None
    return c


@pytest.mark.parametrize("republish", [False, True], ids=["next-poll", "republished"])
async def test_a_family_a_reload_includes_starts_at_0_and_counts_only_what_follows(
    aiohttp_server: ServerFactory, republish: bool
) -> None:
    """``republish``: the reload shows the family at once (at 0), before any poll."""
    async with rig(aiohttp_server, CONFIG) as r:
        r.store = Store(r.clock, selection=HIDDEN)
        poller = r.poller(revisit_minutes=0)
        await r.drive(poller, 60 * 60)
        rid = r.sim.resources(ACC)[0].id
        account = {"account": ACC, "side": "edge", "code": "200"}
        resource = {**account, "resource": rid}
        assert r.fragment().value(ACCOUNT.responses_total, **account) is None
        since = cursor(poller)

        r.store.selection = FamilySelection()
        poller.publisher.reselect()  # what a reload does
        seen: list[tuple[float | None, float | None]] = []

        def values() -> tuple[float | None, float | None]:
            f = r.fragment()
            return (
                f.value(ACCOUNT.responses_total, **account),
                f.value(RESOURCE.responses_total, **resource),
            )

        if republish:
            assert await poller.publisher.republish() == 1
            seen.append(values())
        for _ in range(10 * 4):
            await poller.poll(ACC)
            seen.append(values())
            r.clock.advance(15)
        assert seen[0] == (0.0, 0.0)
        last = cursor(poller)
        assert last >= since + 9 * 60
        assert seen[-1] == (
            truth(r, "edge_status_200", since + 60, last),
            truth(r, "edge_status_200", since + 60, last, rid),
        )
        assert seen[-1][0] > 0
        edge = [a for a, _ in seen]
        assert edge == sorted(edge)  # type: ignore[type-var]  # never decreasing


async def test_per_code_series_a_restart_newly_exports_count_only_what_follows(
    aiohttp_server: ServerFactory, tmp_path: Path
) -> None:
    state_file = str(tmp_path / "traffic.json")
    res, by_class = RESOURCE.responses_total, RESOURCE.responses_by_class_total
    ok = {"class": "2xx"}
    async with rig(aiohttp_server, CONFIG) as r:
        rid = r.sim.resources(ACC)[0].id
        before = r.poller(state_file=state_file, resource_status_codes="classes", revisit_minutes=0)
        await r.drive(before, 30 * 60)
        since = cursor(before)
        classes = r.fragment().value(by_class, account=ACC, resource=rid, side="edge", **ok)
        assert classes is not None
        assert classes > 0

        after = r.poller(state_file=state_file, resource_status_codes="codes", revisit_minutes=0)
        codes: list[float | None] = []
        for _ in range(10 * 4):
            await after.poll(ACC)
            codes.append(
                r.fragment().value(res, account=ACC, resource=rid, side="edge", code="404")
            )
            r.clock.advance(15)
        last = cursor(after)
        assert codes[0] == 0.0
        assert codes[-1] == truth(r, "edge_status_404", since + 60, last, rid)
        assert codes[-1] < truth(r, "edge_status_404", since - 29 * 60, last, rid)
        # the 2xx series was exported before the restart: it goes on with its whole count
        assert r.fragment().value(by_class, account=ACC, resource=rid, side="edge", **ok) == (
            classes + truth(r, "edge_status_2xx", since + 60, last, rid)
        )


async def test_per_code_series_first_published_after_a_failing_save_start_at_0(
    aiohttp_server: ServerFactory, tmp_path: Path
) -> None:
    """Restarted with per-code series on a state volume that cannot be written: the
    counters are held back until a save succeeds, and the first fragment published then
    shows the new series at 0 (the refresh that marked them at 0 was never published),
    then what was counted after (simulation seed 4070)."""
    state_file = tmp_path / "traffic.json"
    res = RESOURCE.responses_total
    async with rig(aiohttp_server, CONFIG) as r:
        rid = r.sim.resources(ACC)[0].id
        labels = {"account": ACC, "resource": rid, "side": "edge", "code": "404"}
        before = r.poller(
            state_file=str(state_file), resource_status_codes="classes", revisit_minutes=0
        )
        await r.drive(before, 30 * 60)
        tmp = state_file.with_name(f".{state_file.name}.tmp")
        tmp.mkdir()  # every save fails from now on; the last good file stays readable

        after = r.poller(
            state_file=str(state_file), resource_status_codes="codes", revisit_minutes=0
        )
        await r.drive(after, 5 * 60)
        assert after.publisher.file.held_back
        assert r.fragment().value(res, **labels) is None  # nothing unsaved published
        since = cursor(after)
        tmp.rmdir()
        codes: list[float | None] = []
        for _ in range(4 * 4):
            await after.poll(ACC)
            codes.append(r.fragment().value(res, **labels))
            r.clock.advance(15)
        assert not after.publisher.file.held_back
        assert codes[0] == 0.0
        last = cursor(after)
        assert last > since
        assert codes[-1] == truth(r, "edge_status_404", since + 60, last, rid)
        assert codes[-1] > 0


async def late_values(
    r: Rig, poller: TrafficPoller, minutes: int
) -> list[tuple[float | None, float | None]]:
    out = []
    for _ in range(minutes * 4):
        await poller.poll(ACC)
        f = r.fragment()
        labels = {"account": ACC, "after_minutes": "5"}
        out.append((f.value(LATE_REQUESTS, **labels), f.value(LATE_HIT_BYTES, **labels)))
        r.clock.advance(15)
    return out


async def test_the_lateness_counters_a_reload_includes_count_only_what_follows(
    aiohttp_server: ServerFactory,
) -> None:
    # The same simulated hour twice: once with everything exported (the control), once with
    # the lateness counters excluded for 60 minutes and then included.
    async with rig(aiohttp_server, LATE) as control:
        poller = control.poller()
        await control.drive(poller, 60 * 60)
        shown = await late_values(control, poller, 10)
    async with rig(aiohttp_server, LATE) as r:
        r.store = Store(r.clock, selection=HIDDEN)
        poller = r.poller()
        await r.drive(poller, 60 * 60)
        r.store.selection = FamilySelection()
        poller.publisher.reselect()
        seen = await late_values(r, poller, 10)
    assert seen[0] == (0.0, 0.0)
    base = shown[0]
    assert base[0] is not None
    assert base[0] > 0
    assert base[1] is not None
    for got, want in zip(seen[1:], shown[1:], strict=True):
        assert got == (want[0] - base[0], want[1] - base[1])  # type: ignore[operator]
    assert seen[-1][0] > 0  # type: ignore[operator]


Pair = tuple[float | None, float | None]  # late requests, late hit bytes (after 5 minutes)


async def test_the_lateness_counters_a_restart_newly_exports_count_only_what_follows(
    aiohttp_server: ServerFactory, tmp_path: Path
) -> None:
    # The same simulated hour and restart twice: the control exports everything throughout;
    # the other leaves the lateness counters out before the restart and exports them after.
    async def hour_then_restart(selection: FamilySelection, name: str) -> tuple[Pair, list[Pair]]:
        state_file = str(tmp_path / name)
        async with rig(aiohttp_server, LATE) as r:
            r.store = Store(r.clock, selection=selection)
            await r.drive(r.poller(state_file=state_file), 60 * 60)
            labels = {"account": ACC, "after_minutes": "5"}
            f = r.fragment()
            before = (f.value(LATE_REQUESTS, **labels), f.value(LATE_HIT_BYTES, **labels))
            r.store = Store(r.clock)  # the restart, exporting everything
            return before, await late_values(r, r.poller(state_file=state_file), 10)

    (hist_requests, hist_bytes), control = await hour_then_restart(FamilySelection(), "a.json")
    hidden, seen = await hour_then_restart(HIDDEN, "b.json")
    assert hidden == (None, None)
    assert hist_requests is not None
    assert hist_requests > 0
    assert hist_bytes is not None
    assert seen[0] == (0.0, 0.0)
    for got, want in zip(seen[1:], control[1:], strict=True):
        assert got == (want[0] - hist_requests, want[1] - hist_bytes)  # type: ignore[operator]
    assert seen[-1][0] > 0  # type: ignore[operator]


async def test_a_family_a_reload_leaves_out_and_takes_back_goes_on_from_its_whole_count(
    aiohttp_server: ServerFactory,
) -> None:
    # The same simulated hour twice: once with everything exported (the control), once with
    # the request and response counters left out by a reload for half of it and taken back
    # by another. Prometheus saw those series before: they come back with the whole count,
    # never below their last value (at the count since the reload alone they went down).
    left_out = FamilySelection(exclude=["requests_total$", "responses_total$"])

    async def hour(gap: bool) -> tuple[Pair, list[Pair]]:
        async with rig(aiohttp_server, CONFIG) as r:
            r.store = Store(r.clock)
            poller = r.poller(revisit_minutes=0)
            rid = r.sim.resources(ACC)[0].id
            account = {"account": ACC, "side": "edge"}

            def values() -> Pair:
                f = r.fragment()
                return (
                    f.value(ACCOUNT.requests_total, **account),
                    f.value(RESOURCE.responses_total, **account, resource=rid, code="200"),
                )

            await r.drive(poller, 20 * 60)
            before = values()
            if gap:
                r.store.selection = left_out
                poller.publisher.reselect()
            await r.drive(poller, 30 * 60)
            hidden = values()
            r.store.selection = FamilySelection()
            poller.publisher.reselect()
            seen: list[Pair] = []
            for _ in range(10 * 4):
                await poller.poll(ACC)
                seen.append(values())
                r.clock.advance(15)
            return before, [hidden, *seen]

    before, control = await hour(gap=False)
    shown, seen = await hour(gap=True)
    assert shown == before
    assert before[0] is not None
    assert before[0] > 0
    assert before[1] is not None
    assert before[1] > 0
    assert seen[0] == (None, None)
    assert seen[1:] == control[1:]
    assert seen[1][0] > before[0]  # type: ignore[operator]
    assert seen[1][1] > before[1]  # type: ignore[operator]


def test_one_lateness_counter_a_reload_includes_alone_starts_at_0() -> None:
    # Late requests left out while late hit bytes were published: the reload that includes
    # them drops their history; a settle read adds 7 before the next refresh, which shows
    # them at 0 (new to Prometheus), then at 7; hit bytes go on from their whole count.
    led = AccountLedger()
    led.late[5] = Late(requests=1000.0, hit_bytes=5.0e6, shown={"hit_bytes"})
    assert exposure.start_at_zero(led, {"late": ["requests"]})
    led.late[5].requests += 7.0
    led.late[5].hit_bytes += 9.0
    labels = {"account": ACC, "after_minutes": "5"}
    seen = []
    for _ in range(2):
        f = build_fragment(ACC, led, None)
        seen.append((f.value(LATE_REQUESTS, **labels), f.value(LATE_HIT_BYTES, **labels)))
    assert seen == [(0.0, 5.0e6 + 9.0), (7.0, 5.0e6 + 9.0)]
