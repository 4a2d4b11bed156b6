"""The daemon's own files are read only when regular and bounded (exporter/support/ownfiles.py)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from exporter.support.ownfiles import NotOurFile, read_own
from exporter.traffic import state_lost, state_read
from tests.traffic.logcapture import capture_logs


def test_a_regular_file_is_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "f"
    data = os.urandom(3 << 20)  # more than one read
    path.write_bytes(data)
    assert read_own(str(path)) == data
    assert read_own(str(path), limit=len(data)) == data


def test_a_file_longer_than_the_limit_is_not_ours(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x" * 11)
    with pytest.raises(NotOurFile, match="longer than 10 bytes"):
        read_own(str(path), limit=10)


def test_a_fifo_or_a_directory_is_not_ours(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(NotOurFile, match="not a regular file"):
        read_own(str(fifo))
    with pytest.raises(OSError):  # noqa: PT011 (IsADirectoryError, or NotOurFile where opened)
        read_own(str(tmp_path))
    with pytest.raises(FileNotFoundError):
        read_own(str(tmp_path / "absent"))


def _load_within(path: Path, seconds: float) -> list[dict[str, object]] | None:
    """The log lines of ``state_read.load(path)``, or None when it did not return in time."""
    out: list[list[dict[str, object]]] = []

    def load() -> None:
        with capture_logs() as logs:
            assert state_read.load(str(path)) == {}
        out.append(logs)

    thread = threading.Thread(target=load, daemon=True)
    thread.start()
    thread.join(seconds)
    return out[0] if out else None


def test_a_fifo_at_the_state_files_path_never_holds_the_start(tmp_path: Path) -> None:
    """A FIFO with no writer where the state file or its cursor file belongs: the start reads
    neither (open would wait for a writer) and starts afresh, naming the file."""
    path = tmp_path / "traffic.json"
    os.mkfifo(path)
    logs = _load_within(path, 10.0)
    assert logs is not None
    assert [e["event"] for e in logs] == ["traffic_state_unreadable"]
    assert "not a regular file" in str(logs[0]["problem"])
    path.unlink()
    path.write_bytes(b"\x00 not json")
    os.mkfifo(state_lost.cursors_path(str(path)))
    lost: list[state_lost.Lost] = []
    done: list[bool] = []
    thread = threading.Thread(
        target=lambda: done.append(state_read.load(str(path), lost=lost) == {}), daemon=True
    )
    thread.start()
    thread.join(10.0)
    assert done == [True]
    assert (lost[0].saved_at, lost[0].cursors) == (None, {})
