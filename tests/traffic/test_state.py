"""The state file: round trip, atomic write, and unusable files ignored with a warning."""

from __future__ import annotations

import json
from array import array
from collections.abc import Iterable
from pathlib import Path

import pytest

from exporter.support.partfile import Part, PartFile, Piece
from exporter.traffic import state, state_read
from exporter.traffic.counters import Series
from exporter.traffic.ledger import AccountLedger, Reread, Terms
from exporter.traffic.parse import COUNT_INDEX, ResourceRow, parse_row
from exporter.traffic.windows import Window
from tests.traffic.logcapture import capture_logs

T = 1_767_225_600
REQ = COUNT_INDEX["edge_requests_total"]


def sample() -> AccountLedger:
    led = AccountLedger()
    rows = [ResourceRow("r1", "www", "www.example", parse_row({"edge_requests_total": 3.5}))]
    led.count_first_read(
        Window(T, T + 60), parse_row({"edge_hit_bytes": 9}), rows, None, T + 0.5, (300, 5)
    )
    led.long_refused = True
    return led


def test_round_trip_keeps_cursor_counters_and_runs() -> None:
    data = state.dump({"acme": sample()}, T)
    led = state_read.parse(data)["acme"]
    assert led.cursor == T
    assert led.long_refused
    assert led.totals[COUNT_INDEX["edge_hit_bytes"]] == 9
    assert led.series["r1"].name == "www"
    assert led.series["r1"].values[REQ] == 3.5
    run = led.pending[0]
    assert (run.start, run.end, run.last_read_at) == (T, T + 60, T + 0.5)
    assert run.resources["r1"][REQ] == 3.5
    assert state.dump({"acme": led}, T) == data


def text_of(pieces: Iterable[Piece]) -> str:
    return "".join(p if isinstance(p, str) else p.make() for p in pieces)


def test_a_save_makes_only_the_parts_changed_since_the_save_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``PartFile`` copies the parts the save before wrote unchanged: the next save encodes
    only the values of a series part or a run's resources that changed (a minute counted, a
    run settled), and its bytes are those of the whole text made anew."""
    encoded: list[list[float]] = []
    real = state._text
    monkeypatch.setattr(state, "_text", lambda v: encoded.append(v.tolist()) or real(v))
    file = PartFile(str(tmp_path / "traffic.json"))
    led = sample()
    led.series["r2"] = Series("two", "two.example", array("d", led.series["r1"].values))
    first = file.write(state.pieces({"acme": led}, T))
    assert (first.made, first.copied) == (2, 0)  # the series part, the run's resources
    assert len(encoded) == 5  # the totals, two series, the run's totals and one resource
    encoded.clear()
    again = file.write(state.pieces({"acme": led}, T))
    assert (again.made, again.copied) == (0, 2)
    assert 0 < again.copied_bytes < again.size == first.size
    assert len(encoded) == 2  # the totals of the account and of the run, made at every save
    assert (tmp_path / "traffic.json").read_bytes() == state.dump({"acme": led}, T)
    encoded.clear()
    led.series["r1"].values[REQ] = 7.0
    third = file.write(state.pieces({"acme": led}, T + 60))
    assert (third.made, third.copied) == (1, 1)
    # the two totals (no requests counted), and the part of r1 and r2 made anew
    assert [v[REQ] for v in encoded if v[REQ] == v[REQ]] == [7.0, 3.5]
    assert len(encoded) == 4
    data = (tmp_path / "traffic.json").read_bytes()
    assert data == state.dump({"acme": led}, T + 60)
    assert json.loads(data)["accounts"]["acme"]["series"]["r1"][2][REQ] == 7


def test_a_series_part_holds_at_most_its_limit_of_series(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The series are cut into parts of ``SERIES_PART``: a change to one series makes its
    part again, not the others."""
    monkeypatch.setattr(state, "SERIES_PART", 2)
    led = sample()
    for i in range(5):
        led.series[f"s{i}"] = Series(f"n{i}", "", array("d", led.series["r1"].values))
    file = PartFile(str(tmp_path / "traffic.json"))
    assert file.write(state.pieces({"acme": led}, T)).made == 4  # 3 of series, 1 of the run
    led.series["s4"].last_seen = T + 60
    assert (file.write(state.pieces({"acme": led}, T)).made) == 1
    assert (tmp_path / "traffic.json").read_bytes() == state.dump({"acme": led}, T)


def test_the_saved_text_is_compact_json_built_from_encoded_series() -> None:
    """Each series and run value is encoded as its part is made (short strings, not a list of
    numbers each); the file is the same compact JSON as the standard library writes for the
    whole document."""
    pieces = list(state.pieces({"acme": sample()}, T))
    assert [type(p) for p in pieces if not isinstance(p, str)] == [Part, Part]
    data = state.dump({"acme": sample()}, T)
    assert data == text_of(pieces).encode()
    parsed = json.loads(data)
    assert data == json.dumps(parsed, separators=(",", ":"), allow_nan=False).encode()
    assert parsed["accounts"]["acme"]["series"]["r1"][:2] == ["www", "www.example"]


def test_a_run_is_written_as_the_compact_json_of_its_fields() -> None:
    """A pending run's text, written at once, is what json.dumps writes of its fields (ids
    escaped as JSON escapes them, floats and ints as they are, sets sorted)."""
    led = sample()
    run = led.pending[0]
    run.resources['r"2\u00e9'] = run.resources["r1"]
    run.resources["r\u00e9\n"] = run.totals
    run.folded = frozenset({"z", 'r"2\u00e9'})
    run.done = frozenset({"totals"})
    run.failures, run.retry_at, run.failing_since, run.settled, run.reading = 2, T + 0.25, T, 5, 15
    text = text_of(state._run(run))
    want = {
        "start": run.start,
        "end": run.end,
        "last_read_at": run.last_read_at,
        "first_read_at": run.first_read_at,
        "totals": state._enc(run.totals),
        "resources": {rid: state._enc(v) for rid, v in run.resources.items()},
        "folded": sorted(run.folded),
        "failures": 2,
        "retry_at": T + 0.25,
        "settled": 5,
        "reading": 15,
        "done": ["totals"],
        "failing_since": T,
        "first": run.first,
    }
    assert text == json.dumps(want, separators=(",", ":"), allow_nan=False)
    run.retry_at = float("inf")  # refused as json.dumps refuses it, never written as text
    with pytest.raises(ValueError, match="Out of range"):
        text_of(state._run(run))


def test_a_state_file_written_before_the_parts_loads_and_is_saved_the_same(
    tmp_path: Path,
) -> None:
    """The upgrade: a file the whole-text save wrote (``data/state-before-parts.json``,
    written by the exporter before the save in parts) loads, and the first save in parts
    writes what the whole text of the loaded ledgers is."""
    older = Path(__file__).parent / "data" / "state-before-parts.json"
    path = tmp_path / "traffic.json"
    path.write_bytes(older.read_bytes())
    led = state_read.load(str(path))["acme"]
    assert led.cursor == T
    assert led.series["r1"].values[REQ] == 3.5
    assert (led.late[5].requests, led.late[5].hit_bytes) == (3.0, 0.0)  # one not exported
    run = led.pending[0]
    assert run.resources["r2"][COUNT_INDEX["edge_hit_bytes"]] == 9
    exported = json.loads(older.read_bytes())["exported_keys"]
    file = PartFile(str(path))
    file.write(state.pieces({"acme": led}, T + 60, exported))
    assert path.read_bytes() == state.dump({"acme": led}, T + 60, exported)
    again = state_read.load(str(path))["acme"]
    assert state.dump({"acme": again}, T + 60, exported) == path.read_bytes()


def test_round_trip_keeps_last_seen_folds_retries_and_marks_restored_series_shown() -> None:
    before = sample()
    before.pending[0].folded = frozenset({"r9"})
    before.pending[0].failures = 2
    before.pending[0].retry_at = T + 900.0
    before.slow_cap, before.slow_until = 5, T + 3600.0
    led = state_read.parse(state.dump({"acme": before}, T + 7))["acme"]
    assert led.series["r1"].last_seen == T + 0.5
    assert led.pending[0].folded == frozenset({"r9"})
    assert (led.pending[0].failures, led.pending[0].retry_at) == (2, T + 900.0)
    assert (led.slow_cap, led.slow_until) == (5, T + 3600.0)
    # Published before the restart: shown with their value at once, never at 0 again.
    assert led.series["r1"].shown[REQ] == 1
    assert led.totals_shown[COUNT_INDEX["edge_hit_bytes"]] == 1
    # An older file without last_seen: the series counts as seen when the file was saved.
    doc = json.loads(state.dump({"acme": before}, T + 7))
    doc["accounts"]["acme"]["series"]["r1"] = doc["accounts"]["acme"]["series"]["r1"][:3]
    assert state_read.parse(json.dumps(doc).encode())["acme"].series["r1"].last_seen == T + 7


def test_saved_keys_are_matched_by_name_not_position() -> None:
    doc = json.loads(state.dump({"acme": sample()}, T))
    doc["count_keys"] = ["retired_metric", *reversed(doc["count_keys"])]
    acc = doc["accounts"]["acme"]
    acc["totals"] = [7, *reversed(acc["totals"])]
    acc["series"] = {}
    acc["pending"] = []
    led = state_read.parse(json.dumps(doc).encode())["acme"]
    assert led.totals[COUNT_INDEX["edge_hit_bytes"]] == 9


def test_write_is_atomic_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    path = tmp_path / "traffic.json"
    state.write_atomic(str(path), b"{}")
    state.write_atomic(str(path), state.dump({"acme": sample()}, T))
    assert set(state_read.load(str(path))) == {"acme"}
    assert [p.name for p in tmp_path.iterdir()] == ["traffic.json"]


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b'{"version": 1, "accounts": {"acme": {"cur', "not JSON"),
        (b"\x00\xff garbage", "not JSON"),
        (b'{"version": 99, "count_keys": [], "accounts": {}}', "version"),
        (b"[]", "expected an object"),
        (b'{"version": 1, "count_keys": [], "accounts": {"a": {"cursor": 61}}}', "cursor"),
        (b'{"version": 1, "count_keys": ["x"], "accounts": {"a": {"totals": ["1"]}}}', "totals"),
    ],
)
def test_an_unusable_state_file_is_reported_and_ignored(
    tmp_path: Path, content: bytes, problem: str
) -> None:
    path = tmp_path / "state.json"
    path.write_bytes(content)
    with capture_logs() as logs:
        assert state_read.load(str(path)) == {}
    warning = next(e for e in logs if e["log_level"] == "warning")
    assert warning["path"] == str(path)
    assert problem in warning["problem"]


def test_a_missing_state_file_is_a_fresh_start(tmp_path: Path) -> None:
    with capture_logs() as logs:
        assert state_read.load(str(tmp_path / "nope.json")) == {}
    assert all(e["log_level"] != "warning" for e in logs)


def test_round_trip_keeps_the_age_of_each_run_and_the_lateness_measured() -> None:
    led = sample()
    run = led.pending[0]
    rows = {"r1": ResourceRow("r1", "www", "www.example", parse_row({"edge_requests_total": 5}))}
    totals = parse_row({"edge_requests_total": 104, "edge_hit_bytes": 12})
    led.settle(run, Reread(totals, rows), Terms((5, 15, 60), 10))
    assert run.settled == 5  # the age of the read done, not its index in the schedule
    back = state_read.parse(state.dump({"acme": led}, T))["acme"]
    (again,) = back.pending
    assert (again.settled, again.first, again.first_read_at) == (5, run.first, run.first_read_at)
    assert again.totals[REQ] == 104  # what is counted now: the next stage compares with it
    assert again.resources["r1"][REQ] == 5
    late = back.late[5]
    assert (late.requests, late.hit_bytes) == (led.late[5].requests, led.late[5].hit_bytes)
    assert late.requests > 0
    assert late.share == led.late[5].share
    assert state.dump({"acme": back}, T) == state.dump({"acme": led}, T)


@pytest.mark.parametrize(
    ("stage", "late", "settled"),
    [
        (0, [5, 15, 60], 0),
        (1, [5, 15, 60], 5),  # the ages measured are the schedule's: the index's own age
        (2, [5, 15, 60], 15),
        (2, [2, 5, 15, 60], 5),  # an older schedule's age too: never above the age done
        (2, [5], 0),  # too few measured: read again at every age of today's schedule
    ],
)
def test_a_state_file_with_stage_indexes_is_migrated_to_ages(
    stage: int, late: list[int], settled: int
) -> None:
    doc = json.loads(state.dump({"acme": sample()}, T))
    for run in doc["accounts"]["acme"]["pending"]:
        del run["settled"], run["reading"]
        run["stage"] = stage
    doc["accounts"]["acme"]["late"] = {str(age): [1, 0, 0.01] for age in late}
    (run,) = state_read.parse(json.dumps(doc).encode())["acme"].pending
    assert run.settled == settled


def test_a_state_file_without_stages_is_at_its_first_settle_read() -> None:
    doc = json.loads(state.dump({"acme": sample()}, T))
    for run in doc["accounts"]["acme"]["pending"]:
        del run["settled"], run["reading"], run["first"], run["first_read_at"]
    del doc["accounts"]["acme"]["late"]
    (run,) = state_read.parse(json.dumps(doc).encode())["acme"].pending
    assert run.settled == 0
    assert run.first_read_at == run.last_read_at
    assert run.first == 0  # the first read had no edge_requests_total


VALUES = [
    [1.0, 2.0, 0.0, -3.0],
    [1.5, 2.0],
    [float("nan"), 3.0],
    [float("inf"), 1.0, float("-inf")],
    [2.0**60, 1.0],
    [2.0**53 - 1, -(2.0**53) + 1],
    [2.0**53, 1.0],
    [-(2.0**53)],
    [-0.0],
    [],
    [float(i * 123_456_789_012) for i in range(49)],
]


@pytest.mark.parametrize("values", VALUES)
def test_values_are_saved_whole_as_ints_and_missing_as_null(values: list[float]) -> None:
    """Each value as the plain rule says: NaN -> null, a whole number below 2**53 -> an int
    (as it was counted), anything else the float itself (the fast path changes no value)."""
    from array import array

    got = state._enc(array("d", values))
    want = [None if x != x else int(x) if x.is_integer() and abs(x) < 2**53 else x for x in values]
    assert json.dumps(got) == json.dumps(want)
    assert [type(x) for x in got] == [type(x) for x in want]


@pytest.mark.parametrize("values", VALUES)
def test_the_text_of_values_is_json_of_what_is_saved(values: list[float]) -> None:
    """The state file holds each series' values as the text of ``_enc`` in compact JSON,
    however it is written (at once from the ints when every value is whole)."""
    from array import array

    encoded = state._enc(array("d", values))
    try:
        want = json.dumps(encoded, separators=(",", ":"), allow_nan=False)
    except ValueError:  # infinity: refused, as before
        with pytest.raises(ValueError, match="Out of range"):
            state._text(array("d", values))
        return
    assert state._text(array("d", values)) == want
