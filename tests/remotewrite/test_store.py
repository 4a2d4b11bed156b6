"""The remote-write store keeps pending minutes in their files, not in memory: each body is
read when it is sent, every minute offered is kept (oldest first), and a crash keeps them."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

from exporter.remotewrite.store import SUFFIX, MinuteStore

M = 1_767_225_600  # a minute start
ACC = "acme/west"  # quoted in its folder's name


def file_of(root: Path, minute: int) -> Path:
    return root / quote(ACC, safe="") / f"{minute}{SUFFIX}"


def test_a_pending_body_is_read_from_its_file_when_it_is_sent(tmp_path: Path) -> None:
    store = MinuteStore(str(tmp_path), 3600.0)
    bodies = {M + 120: b"third", M: b"first", M + 60: b"second"}
    assert store.offer(ACC, bodies) == [M, M + 60, M + 120]
    assert store.pending() == {ACC: [M, M + 60, M + 120]}  # oldest first
    file_of(tmp_path, M + 60).write_bytes(b"as on disk")  # what is sent is the file's
    assert [store.body(ACC, m) for m in (M, M + 60, M + 120)] == [
        b"first",
        b"as on disk",
        b"third",
    ]


def test_a_crash_keeps_every_pending_minute_in_order_with_its_bytes(tmp_path: Path) -> None:
    store = MinuteStore(str(tmp_path), 3600.0)
    offered = {M + 60 * i: f"minute {i}".encode() * 100 for i in (4, 0, 2, 1, 3)}
    store.offer(ACC, offered)
    store.done(ACC, M, M + 300)
    restarted = MinuteStore(str(tmp_path), 3600.0)  # nothing closed: a crash
    assert restarted.pending() == {ACC: [M + 60, M + 120, M + 180, M + 240]}
    assert all(restarted.body(ACC, m) == offered[m] for m in restarted.pending()[ACC])
    assert restarted.offer(ACC, {M: b"again", M + 60: b"changed"}) == []  # written / kept
    assert restarted.body(ACC, M + 60) == offered[M + 60]


def test_a_minute_whose_file_cannot_be_written_is_kept_in_memory(tmp_path: Path) -> None:
    failures: list[str] = []
    occupied = tmp_path / "store"
    occupied.write_text("not a directory", encoding="utf-8")
    store = MinuteStore(str(occupied), 3600.0, lambda what, exc: failures.append(what))
    store.offer(ACC, {M: b"kept"})
    assert failures
    assert store.pending() == {ACC: [M]}
    assert store.body(ACC, M) == b"kept"


def test_a_pending_file_gone_is_left_out_and_said(tmp_path: Path) -> None:
    failures: list[str] = []
    store = MinuteStore(str(tmp_path), 3600.0, unreadable=lambda what, exc: failures.append(what))
    store.offer(ACC, {M: b"first", M + 60: b"second"})
    file_of(tmp_path, M).unlink()
    assert store.body(ACC, M) is None
    assert failures == [str(file_of(tmp_path, M))]
    assert store.pending() == {ACC: [M + 60]}
