"""bench/decode.py at a small size: the simulator's reply is read by both trees, rows counted
(timings are never asserted)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from bench import decode


def test_both_trees_read_every_row_of_the_reply(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    raw = asyncio.run(decode.fetch(300))
    assert len(json.loads(raw)["data"]) == 300
    path = tmp_path / "body.json"
    path.write_bytes(raw)
    here = Path(decode.__file__).resolve().parent.parent
    for mode in ("cpu", "mem"):
        got = decode.measure(here, path, mode)
        assert got["rows"] == 300
        assert ("peak" in got) == (mode == "mem")
    decode.main(["--resources", "300", "--runs", "1", "--before", "HEAD"])
    table = capsys.readouterr().out
    assert "300 resources" in table
    assert "HEAD " in table
    assert "this tree" in table
