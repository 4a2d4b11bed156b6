"""The aged start: the files ``bench.aged`` writes are of the shape the daemon reads, and
``python -m bench --aged-hours`` reports the aged start beside the fresh one (no timings)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from bench import aged
from bench.report import AGED_HEADERS
from bench.targets import AGED_TARGETS, TARGETS
from exporter.remotewrite.build import store_dir
from exporter.remotewrite.store import MinuteStore
from exporter.remotewrite.wire import decode
from exporter.simulator.dataset import cdn_resources
from exporter.traffic import history_file, state_lost, state_read
from exporter.traffic.audit import AuditBook
from exporter.traffic.audit_record import AuditRecord, record_dir
from tests.bench.test_bench_smoke import bench_lines

HOURS = 2.0


def test_aged_files_hold_what_a_daemon_keeps_after_the_hours(tmp_path: Path) -> None:
    accounts = [aged.Account(n, cdn_resources(i + 1, n, 3)) for i, n in enumerate(("a", "b"))]
    path = str(tmp_path / "traffic-state.json")
    now = time.time()
    aged.write(path, accounts, HOURS, now)

    rejected: list[str] = []
    ledgers = state_read.load(path, rejected)
    assert rejected == []
    assert sorted(ledgers) == ["a", "b"]
    cursor = aged.newest_ready(now)
    for a in accounts:
        led = ledgers[a.name]
        assert led.cursor == cursor
        assert set(led.series) == {r.id for r in a.resources}
        assert [r.start for r in led.pending] == [cursor - 60 * i for i in (4, 3, 2, 1, 0)]
        assert all(set(r.resources) == set(led.series) for r in led.pending)
    cursors = json.loads(Path(state_lost.cursors_path(path)).read_bytes())
    assert cursors["cursors"] == {"a": cursor, "b": cursor}

    book = AuditBook()
    AuditRecord(record_dir(path)).load(book)
    for name in ("a", "b"):
        windows = book.accounts[name].counted
        # a 1-minute window a minute, the hours long (the minute under way too)
        assert HOURS * 60 <= len(windows) <= HOURS * 60 + 1
        assert all(w.end - w.start == 60 for w in windows)
        assert len(book.accounts[name].sample) == 60  # an audit under way

    store = MinuteStore(store_dir(path), 330 * 60)
    pending = store.pending()
    newest = aged.last_final(now)
    for a in accounts:
        minutes = pending[a.name]
        assert minutes == list(range(newest - 59 * 60, newest + 60, 60))  # the hour down
        series = decode(store.body(a.name, minutes[-1]) or b"")
        assert {s.timestamp_ms for s in series} == {newest * 1000}
        labels = {dict(s.labels).get("resource") for s in series}
        assert labels - {None} == {r.id for r in a.resources}
        written = store.newest_written(a.name)
        assert written == newest - 60 * 60  # acknowledged up to the outage

    charts = Path(history_file.charts_path(path)).read_bytes()
    assert [len(p) for p in json.loads(charts)["accounts"].values()] == [60, 60]  # the ring
    assert all(history_file.parse(charts, now).values())

    sizes = aged.sizes(path)
    assert sizes["audit_files"] >= 2  # a head and a day file at least
    assert sizes["remote_write_files"] == 2 * 60 + 1  # the minutes pending, written.json
    assert all(sizes[k] > 0 for k in ("state", "cursors", "charts", "audit", "remote_write"))


@pytest.mark.slow
@pytest.mark.realtime  # mostly waits on the processes it starts: run beside the rest
def test_bench_reports_the_aged_start_beside_the_fresh_one(tmp_path: Path) -> None:
    args = ["--scales", "4", "--quick", "--steady-seconds", "1", "--out", str(tmp_path),
            "--simulation-minutes", "0", "--aged-hours", "0.5", "--per-account", "2",
            "--no-prometheus"]  # fmt: skip
    lines = bench_lines(args, timeout=180)
    first = lines.index("")
    second = lines.index("", first + 1)
    third = lines.index("", second + 1)  # the cost table between
    table, goals = lines[first + 1 : second], lines[third + 1 :]
    assert table[0].split() == " ".join(AGED_HEADERS).split()
    starts = [row.split()[2] for row in table[2:]]  # after "4 (2)"
    assert starts == ["fresh", "0.5", "0.5"]
    names = [t.name for t in (*TARGETS, *AGED_TARGETS)]
    assert len(goals[2:]) == len(names)
    for line, name in zip(goals[2:], names, strict=True):
        assert name in line
        assert line.split()[-1] in ("met", "MISSED", "n/a")

    (result,) = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))["results"]
    assert result["accounts"] == 2
    a = result["aged"]
    assert a["hours"] == 0.5
    assert min(a["ready_s"], a["traffic_ready_s"], a["rss_mb"], a["healthz"]) > 0
    assert a["files_written"]["remote_write_files"] == 2 * 30  # down the whole half hour
    assert min(a["files"]["state"], result["files"]["state"]) > 0
    markdown = (tmp_path / "results.md").read_text(encoding="utf-8")
    assert "## Aged start" in markdown
