"""A state file ignored as a whole (corrupt, truncated): the daemon reads on from where it left
off, against the simulator over real HTTP, and names what it cannot read (docs/windowing.md,
*State file*)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from exporter.simulator import SimConfig
from exporter.traffic import state_lost, state_read
from tests.traffic.logcapture import capture_logs
from tests.traffic.test_against_simulator import (
    ACC,
    Rig,
    ServerFactory,
    assert_counters_equal_truth,
    drain,
    rig,
)

# The schedule [5]: a run gathers up to 5 minutes and is read 5 minutes after its newest
# first read, so up to 5 + 5 - 1 minutes are owed a settle read at any time.
OWED_AT_MOST = 9


def spoil(path: Path, damage: Callable[[bytes], bytes]) -> None:
    path.write_bytes(damage(path.read_bytes()))


def lose_cursor_file(state_file: Path) -> None:
    Path(state_lost.cursors_path(str(state_file))).unlink()


async def restart_on(
    r: Rig,
    state_file: Path,
    damage: Callable[[bytes], bytes],
    cursor_file: bool = True,
    revisit: object = 5,
) -> tuple[int, int, int]:
    """Run 20 minutes (settle reads at ``revisit``), damage the state file (``damage`` of
    its bytes; without ``cursor_file``, the cursor file beside it lost too), stay down 4
    minutes, start again with ``revisit_minutes: 5`` and run 10; returns the cursor before
    and after, and the minutes owed a settle read at the stop."""
    poller = r.poller(state_file=str(state_file), revisit_minutes=revisit)
    await r.drive(poller, 20 * 60)
    before = poller.accounts.ledger(ACC).cursor
    assert before is not None
    owed = sum(run.minutes for run in poller.accounts.ledger(ACC).pending)
    spoil(state_file, damage)
    if not cursor_file:
        lose_cursor_file(state_file)
    r.clock.advance(4 * 60)
    again = r.poller(state_file=str(state_file))
    again.accounts.serve([ACC])
    await r.drive(again, 10 * 60)
    after = again.accounts.ledger(ACC).cursor
    assert after is not None
    return before, after, owed


def _corrupt(data: bytes) -> bytes:
    return b"\x00\x13" + data[:40]  # its first 40 bytes behind garbage


@pytest.mark.parametrize(
    ("damage", "cursor_file", "cursor_from", "missed"),
    [
        # cut in half: the cursors at its head are legible
        (lambda data: data[: len(data) // 2], True, "the file", 0),
        # only saved_at is legible: the cursor file of the same save holds the cursors
        (_corrupt, True, "the file", 0),
        # ... lost too: the file was saved in the poll that read the cursor's minute: read
        # then, or, for all the file says, in the poll after (not read): counted as missed
        # rather than read twice
        (_corrupt, False, "its save", 1),
    ],
    ids=["truncated", "corrupt", "corrupt-without-cursor-file"],
)
async def test_a_state_file_ignored_as_a_whole_is_read_on_from_where_it_says(
    aiohttp_server: ServerFactory,
    tmp_path: Path,
    damage: Callable[[bytes], bytes],
    cursor_file: bool,
    cursor_from: str,
    missed: int,
) -> None:
    path = tmp_path / "traffic.json"
    async with rig(aiohttp_server, SimConfig(late_seconds=240, resources_per_account=3)) as r:
        with capture_logs() as logs:
            before, after, owed = await restart_on(r, path, damage, cursor_file)
        taken = next(e for e in logs if e["event"] == "traffic_state_taken_over")
        # the minute read last before the stop
        assert (taken["cursor_from"], taken["cursor"]) == (cursor_from, before)
        assert taken["missed_minutes"] == r.windows("missed") == missed
        # the minutes owed at the last save, as the cursor file says; else the most owed
        assert 0 < owed <= OWED_AT_MOST
        assert r.windows("given_up") == (owed if cursor_file else OWED_AT_MOST)
        assert r.windows("backfilled") >= 4  # the minutes while down are read
        await drain(r, str(path))
        # counters start at 0 again: they hold every minute since ``before`` once
        assert assert_counters_equal_truth(r, range(before + 60, after + 60, 60)) > 0


async def test_the_minutes_owed_under_a_longer_schedule_are_all_given_up(
    aiohttp_server: ServerFactory, tmp_path: Path
) -> None:
    """Seed 1029: saved under ``revisit_minutes: 10``, started with 5 after the state file
    was lost: every minute owed at the save is named, not the most the new schedule owes."""
    path = tmp_path / "traffic.json"
    async with rig(aiohttp_server, SimConfig(late_seconds=240, resources_per_account=3)) as r:
        _, _, owed = await restart_on(r, path, lambda data: data[: len(data) // 2], revisit=10)
        assert owed > OWED_AT_MOST
        assert r.windows("given_up") == owed


def test_what_a_state_file_ignored_as_a_whole_still_says(tmp_path: Path) -> None:
    head = b'{"version":1,"saved_at":1767229205.5,"count_keys":["edge_requests_total"],'
    accounts = b'"accounts":{"a\\"b":{"cursor":1767229020,"totals":[1]},"c":{"cursor":61,'
    path = tmp_path / "state.json"
    path.write_bytes(head + accounts + b'"d":{"cursor":17672')  # cut inside a cursor
    lost: list[state_lost.Lost] = []
    with capture_logs() as logs:
        assert state_read.load(str(path), lost=lost) == {}
    assert [e["event"] for e in logs] == ["traffic_state_ignored"]
    assert lost[0].saved_at == 1767229205.5
    assert lost[0].cursors == {'a"b': 1767229020}  # 61 is no minute; d's is cut
    assert "not JSON" in lost[0].problem


def test_without_a_legible_saved_at_nothing_says_where_the_file_left_off(
    tmp_path: Path,
) -> None:
    path = tmp_path / "state.json"
    path.write_bytes(b"\x00\x13 not json")
    lost: list[state_lost.Lost] = []
    assert state_read.load(str(path), lost=lost) == {}
    assert (lost[0].saved_at, lost[0].cursors) == (None, {})


def test_the_cursor_file_fills_what_the_state_files_text_lost(tmp_path: Path) -> None:
    """The state file's text first (it is never older than the cursor file of its save);
    the cursor file for the accounts and the save time the text no longer holds; the cursor
    file alone (no state file) says nothing: no state file is a fresh start."""
    path = tmp_path / "state.json"
    path.write_bytes(b'\x00\x13{"version":1,"cursors":{"a":1767229080}')
    cursor_file = Path(state_lost.cursors_path(str(path)))
    cursor_file.write_bytes(
        b'{"saved_at": 1767229205.5, "cursors": {"a": 1767229020, "b": 1767229020, "c": 61}}'
    )
    lost: list[state_lost.Lost] = []
    assert state_read.load(str(path), lost=lost) == {}
    assert lost[0].saved_at == 1767229205.5
    assert lost[0].cursors == {"a": 1767229080, "b": 1767229020}  # 61 is no minute
    path.unlink()
    lost.clear()
    assert state_read.load(str(path), lost=lost) == {}
    assert lost == []


def test_a_cursor_file_not_ours_says_nothing(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_bytes(b"\x00\x13 not json")
    for text in (b"[1]", b'{"saved_at": "x", "cursors": [1]}', b"\xff"):
        Path(state_lost.cursors_path(str(path))).write_bytes(text)
        lost: list[state_lost.Lost] = []
        assert state_read.load(str(path), lost=lost) == {}
        assert (lost[0].saved_at, lost[0].cursors) == (None, {})


def test_the_minutes_owed_come_from_a_cursor_file_of_the_same_save(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    cursor_file = Path(state_lost.cursors_path(str(path)))
    cursor_file.write_bytes(
        b'{"saved_at": 1767229205.5, "cursors": {"a": 1767229020},'
        b' "owed": {"a": 14, "b": -1, "c": 2.5, "d": true}}'
    )
    for text, owed in (
        (b'\x00{"version":1,"saved_at":1767229205.5,', {"a": 14}),  # no negative, no fraction
        (b"\x00 not json", {"a": 14}),  # the cursor file's save time is the only one
        (b'\x00{"version":1,"saved_at":1767229265.5,', {}),  # a later save than the cursor file
    ):
        path.write_bytes(text)
        lost: list[state_lost.Lost] = []
        assert state_read.load(str(path), lost=lost) == {}
        assert lost[0].owed == owed
