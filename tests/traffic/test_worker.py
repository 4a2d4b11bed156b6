"""The poller's heavy steps run on its worker thread, never on the event loop, and stay exact
when several accounts are polled at once with a state file."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from exporter.exposition import Store, StoreKey
from exporter.support import offloop
from exporter.support.clock import FakeClock
from exporter.traffic import persist, read, state
from exporter.traffic.families import RESOURCE
from exporter.traffic.ledger import AccountLedger
from tests.rig.source import COUNTED, FakeSource, MakePoller
from tests.traffic.test_poller import KEY_OF, counter, drive, expected, late, scrape, split

HEAVY = ("parse_resources", "parse_totals", "build_fragment")
HOMES = {"parse_resources": read, "parse_totals": read, "build_fragment": persist}


async def test_parsing_counting_settling_and_building_run_off_the_loop(
    source: FakeSource,
    make_poller: MakePoller,
    clock: FakeClock,
    store: Store,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    seen: dict[str, set[int]] = {}

    def spy(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            seen.setdefault(name, set()).add(threading.get_ident())
            return fn(*args, **kwargs)

        return wrapped

    for name in HEAVY:
        monkeypatch.setattr(HOMES[name], name, spy(name, getattr(HOMES[name], name)))
    for name in ("count_first_read", "settle", "prune"):
        monkeypatch.setattr(AccountLedger, name, spy(name, getattr(AccountLedger, name)))
    monkeypatch.setattr(state, "pieces", spy("pieces", state.pieces))
    source.visible = late  # so settle reads change counters
    p = make_poller(revisit_minutes=5, state_file=str(tmp_path / "traffic.json"))
    await drive(p, clock, 20 * 60)

    loop_thread = threading.get_ident()
    assert set(seen) == {*HEAVY, "count_first_read", "settle", "prune", "pieces"}
    for name, threads in seen.items():
        assert loop_thread not in threads, f"{name} ran on the event loop"
    assert len(set().union(*seen.values())) == 1  # one worker: steps never overlap
    settled, unsettled = split(p, source.calls[0].start)
    assert len(settled) >= 10  # settle reads happened (on the worker) and counted exactly
    for key in COUNTED:
        assert counter(store, key) == expected(source, key, settled, unsettled), key


async def test_accounts_polled_at_once_with_a_state_file_count_exactly(
    source: FakeSource, make_poller: MakePoller, clock: FakeClock, store: Store, tmp_path: Path
) -> None:
    source.visible = late
    path = tmp_path / "traffic.json"
    p = make_poller(revisit_minutes=5, state_file=str(path))
    accounts = [f"acct{i}" for i in range(6)]
    end = clock.time() + 30 * 60
    while clock.time() < end:
        await asyncio.gather(*(p.poll(a) for a in accounts))
        scrape(store)
        clock.advance(15)
    first = source.calls[0].start
    saved = json.loads(path.read_text())
    for a in accounts:
        led = p.accounts.ledger(a)
        assert led.cursor is not None
        assert saved["accounts"][a]["cursor"] == led.cursor
        assert led.pending  # some minutes still owe a settle read: first-read figures
        settled = range(first, led.pending[0].start, 60)
        unsettled = range(led.pending[0].start, led.cursor + 60, 60)
        assert len(settled) >= 20
        f = store.fragment(StoreKey("traffic", a), include_stale=True)
        assert f is not None
        # Every account's counters equal the truth over exactly its accounted minutes.
        for key in COUNTED:
            spec, labels = KEY_OF[key]
            want = expected(source, key, settled, unsettled)
            assert f.value(spec, account=a, **labels) == want, (a, key)
        for rid in source.resources:
            got = f.value(RESOURCE.requests_total, account=a, resource=rid, side="edge")
            assert got == expected(source, "edge_requests_total", settled, unsettled, rid)
    reloaded = make_poller(revisit_minutes=5, state_file=str(path))
    cursors = [p.accounts.ledger(a).cursor for a in accounts]
    assert [reloaded.accounts.ledger(a).cursor for a in accounts] == cursors


async def test_save_state_waits_for_the_steps_queued_before_it(
    make_poller: MakePoller, tmp_path: Path
) -> None:
    path = tmp_path / "traffic.json"
    p = make_poller(state_file=str(path))
    led = p.accounts.ledger("acme")
    release = threading.Event()
    offloop.WORKER.submit(release.wait, 5)  # a step still running on the worker

    def move_cursor() -> None:
        led.cursor = 1_767_225_600.0

    offloop.WORKER.submit(move_cursor)
    threading.Timer(0.05, release.set).start()
    await p.publisher.save_state()
    assert json.loads(path.read_text())["accounts"]["acme"]["cursor"] == 1_767_225_600


async def test_accounts_publishing_together_share_one_save_that_holds_each_of_them(
    make_poller: MakePoller, clock: FakeClock, store: Store, tmp_path: Path
) -> None:
    """Publishes whose fragments were built before a save began wait for that one save (it
    snapshots every ledger): each account's counters are on disk before they are shown, and
    accounts polled together (the first polls after a start) do not queue a save each."""
    path = tmp_path / "traffic.json"
    p = make_poller(state_file=str(path))
    accounts = [f"acct{i}" for i in range(4)]
    saves: list[dict[str, Any]] = []
    write = p.publisher.file.write

    def counted(*args: Any) -> bool:
        saves.append({a: led.cursor for a, led in args[0].items()})
        return write(*args)

    p.publisher.file.write = counted  # type: ignore[method-assign]
    for n, a in enumerate(accounts):
        led = p.accounts.ledger(a)
        led.cursor, led.dirty = 1_767_225_600 + 60 * n, True
    release = threading.Event()
    offloop.WORKER.submit(release.wait, 5)  # every build queues behind this step
    publishes = [
        asyncio.create_task(p.publisher.publish(a, p.accounts.ledger(a), clock.time(), ok=True))
        for a in accounts
    ]
    for _ in range(3):
        await asyncio.sleep(0)  # each publish has queued its build
    release.set()
    await asyncio.gather(*publishes)
    assert len(saves) == 1
    on_disk = json.loads(path.read_text())["accounts"]
    for n, a in enumerate(accounts):
        assert saves[0][a] == on_disk[a]["cursor"] == 1_767_225_600 + 60 * n
        assert store.fragment(StoreKey("traffic", a)) is not None
