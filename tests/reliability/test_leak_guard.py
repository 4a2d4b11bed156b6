"""The leak guard itself: it finds planted secrets and known tokens wherever they show up."""

from __future__ import annotations

import io

from .leaks import LeakGuard, ScanningLog


def test_the_guard_finds_a_planted_secret_in_any_output() -> None:
    guard = LeakGuard(io.StringIO())
    guard.log.write('{"msg": "x", "target_key": "yt-SECRET-KEY-1001"}\n')
    guard.add("/metrics", 'cdnvideo_up{account="a"} 1\n')
    hits = guard.scan()
    assert len(hits) == 1
    assert hits[0].startswith("log: SECRET")


def test_the_guard_finds_tokens_known_only_at_the_end() -> None:
    issued: list[str] = []
    guard = LeakGuard(io.StringIO())
    guard.sources.append(lambda: issued)
    guard.add("admin response", '{"token": "cdn1_0f3a9c"}')
    assert guard.scan() == []
    issued.append("cdn1_0f3a9c")  # the simulator issued it during the test
    assert [h.split(":")[0] for h in guard.scan()] == ["admin response"]


def test_a_scanning_log_keeps_nothing_but_the_hits() -> None:
    guard = LeakGuard(io.StringIO())
    guard.secret("config-token-77")
    log = ScanningLog(guard)
    log.write('{"msg": "poll_failed", "error": "boom"}\n')
    log.write('{"msg": "oops", "header": "config-token-77"}\n')
    assert log.getvalue() == ""
    assert log.events == {"poll_failed": 1, "oops": 1}
    assert len(guard.scan()) == 1
    assert guard.scanned_bytes > 60
