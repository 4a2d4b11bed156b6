"""The audit record on disk in pieces (``<state_file>.audit/``): a save appends the windows
settled since the last one and rewrites a small head, no serialisation larger than one
account's head; the older whole-file record is read and replaced; a restart finds the book as
it was."""

from __future__ import annotations

import json
from array import array
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bench.auditrecord import full_book
from exporter.exposition import Store
from exporter.support.clock import FakeClock
from exporter.traffic import audit_record
from exporter.traffic.audit import AuditBook
from exporter.traffic.auditor import Auditor, audit_path
from exporter.traffic.parse import COUNT_KEYS
from exporter.traffic.windows import Window

T0 = 1_767_225_600.0  # 2026-01-01 00:00 UTC
HOUR = 3600.0  # full_book: a 1-minute window settled every minute, an audit under way


class NoReads:
    async def traffic(self, *args: Any) -> Any:
        raise AssertionError("a save reads nothing")


def auditor(state_file: str, clock: FakeClock) -> Auditor:
    return Auditor(NoReads(), Store(clock), clock, audit_path(state_file))  # type: ignore[arg-type]


def same(a: AuditBook, b: AuditBook) -> None:
    assert a.accounts.keys() == b.accounts.keys()
    for name, x in a.accounts.items():
        y = b.accounts[name]
        assert [(c.start, c.end, c.settled_at, list(c.totals)) for c in x.counted] == [
            (c.start, c.end, c.settled_at, list(c.totals)) for c in y.counted
        ]
        assert [c.window for c in x.sample] == [c.window for c in y.sample]
        assert (x.running, x.last, x.minutes, x.due_at) == (y.running, y.last, y.minutes, y.due_at)


def spy_dumps(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The length of every ``json.dumps`` result from now on."""
    sizes: list[int] = []
    real: Callable[..., str] = json.dumps

    def dumps(*args: Any, **kwargs: Any) -> str:
        out = real(*args, **kwargs)
        sizes.append(len(out))
        return out

    monkeypatch.setattr(json, "dumps", dumps)
    return sizes


def test_an_older_whole_file_record_is_read_and_written_in_pieces(tmp_path: Path) -> None:
    state = str(tmp_path / "traffic.json")
    clock = FakeClock(T0 + 48 * HOUR)
    book = full_book(3, 48, clock.time())
    Path(audit_path(state)).write_text(json.dumps(book.to_json()))
    first = auditor(state, clock)
    same(first.book, book)
    first.book.dirty = True
    first.save(force=True)
    assert not Path(audit_path(state)).exists()  # replaced by the pieces
    folder = Path(audit_record.record_dir(state))
    days = sorted(p.name for p in folder.glob("counted-*.jsonl"))
    assert [d[8:18] for d in days] == ["2026-01-01", "2026-01-02"]
    same(auditor(state, clock).book, book)


def test_a_save_appends_what_settled_since_and_no_piece_is_large(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """10 accounts x 24 h of 1-minute windows (bench.auditrecord measures 25 x 48 h): the
    whole record is about 6 MB of JSON; a save after one more minute writes a line per account
    and a head of a few KB, and no single ``json.dumps`` makes more than one account's head."""
    state = str(tmp_path / "traffic.json")
    clock = FakeClock(T0 + 48 * HOUR)
    Path(audit_path(state)).write_text(json.dumps(full_book(10, 24, clock.time()).to_json()))
    a = auditor(state, clock)
    a.book.dirty = True
    a.save(force=True)
    folder = Path(audit_record.record_dir(state))
    sizes_before = {p.name: p.stat().st_size for p in folder.iterdir()}
    assert sum(sizes_before.values()) > 5_000_000
    clock.advance(60)
    sizes = spy_dumps(monkeypatch)
    for i in range(10):
        window = Window(int(clock.time()) - 180, int(clock.time()) - 120)
        a.settled(f"account-{i:02d}", window, array("d", [5.0] * len(COUNT_KEYS)))
    a.save(force=True)
    assert sizes, "the save serialised nothing"
    assert max(sizes) < 16_000  # one account's head or one window's line, never the record
    grown = {
        p.name: p.stat().st_size - sizes_before.get(p.name, 0)
        for p in folder.iterdir()
        if p.name != audit_record.HEAD
    }
    assert 0 < sum(grown.values()) < 10 * 2_000  # 10 lines appended, nothing rewritten
    assert (folder / audit_record.HEAD).stat().st_size < 200_000
    monkeypatch.undo()
    again = auditor(state, clock)
    assert len(again.book.accounts["account-07"].counted) == 24 * 60 + 1
    same(again.book, a.book)


def test_old_day_files_go_and_a_line_cut_short_is_left_out(tmp_path: Path) -> None:
    state = str(tmp_path / "traffic.json")
    clock = FakeClock(T0)
    a = auditor(state, clock)
    totals = array("d", [1.0] * len(COUNT_KEYS))
    for day in range(4):
        clock.set(T0 + day * 24 * HOUR + 600)
        a.settled("acme", Window(int(clock.time()) - 120, int(clock.time()) - 60), totals)
        a.save(force=True)
        if day == 2:  # a crash in the middle of an append
            day_file = Path(audit_record.record_dir(state)) / audit_record.day_file(clock.time())
            with open(day_file, "ab") as fh:
                fh.write(b'["acme", 1, 2, 3')
    folder = Path(audit_record.record_dir(state))
    days = sorted(p.name[8:18] for p in folder.glob("counted-*.jsonl"))
    assert days == ["2026-01-02", "2026-01-03", "2026-01-04"]  # older than 48 h: gone
    again = auditor(state, clock)
    kept = [c.settled_at for c in again.book.accounts["acme"].counted]
    assert kept == [c.settled_at for c in a.book.accounts["acme"].counted]
    assert kept[-1] == T0 + 3 * 24 * HOUR + 600  # the line after the cut one was read
