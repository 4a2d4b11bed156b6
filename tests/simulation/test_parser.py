"""The harness' reading of /metrics: only the families the invariant needs, parsed once each."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from tests.simulation import harness
from tests.simulation.harness import Parser, World
from tests.simulation.scenario import T0, Daemon, draw

HEAD = (
    "# HELP cdnvideo_account_requests_total Requests.\n"
    "# TYPE cdnvideo_account_requests_total counter\n"
)
OTHER = (
    "# HELP cdnvideo_scrape_seconds Machine time.\n"
    "# TYPE cdnvideo_scrape_seconds gauge\n"
    "cdnvideo_scrape_seconds 0.25\n"
)


def _text(edge: float, other: str = OTHER) -> str:
    return HEAD + f'cdnvideo_account_requests_total{{account="acc1",side="edge"}} {edge}\n' + other


def test_only_the_kept_families_are_read_and_an_unchanged_block_is_not_parsed_again() -> None:
    parser = Parser()
    first, blocks = parser.parse(_text(5))
    assert first == {
        "cdnvideo_account_requests_total": {
            ("cdnvideo_account_requests_total", (("account", "acc1"), ("side", "edge"))): 5.0
        }
    }
    assert len(blocks) == 1
    again, _ = parser.parse(_text(5, other=OTHER.replace("0.25", "0.5")))
    assert again["cdnvideo_account_requests_total"] is first["cdnvideo_account_requests_total"]
    changed, _ = parser.parse(_text(7))
    assert (
        changed["cdnvideo_account_requests_total"] is not first["cdnvideo_account_requests_total"]
    )


def test_in_a_changed_block_only_the_lines_that_changed_are_parsed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parsed: list[str] = []
    sample = harness._sample

    def counting(line: str) -> object:
        parsed.append(line)
        return sample(line)

    monkeypatch.setattr(harness, "_sample", counting)
    cdn = 'cdnvideo_account_requests_total{account="acc1",side="cdn"} 3\n'
    parser = Parser()
    parser.parse(_text(5, other=cdn + OTHER))
    assert len(parsed) == 4  # the kept block: HELP (its rest), TYPE and two samples
    parsed.clear()
    changed, _ = parser.parse(_text(7, other=cdn + OTHER))
    assert parsed == ['cdnvideo_account_requests_total{account="acc1",side="edge"} 7']
    assert changed["cdnvideo_account_requests_total"] == {
        ("cdnvideo_account_requests_total", (("account", "acc1"), ("side", "edge"))): 7.0,
        ("cdnvideo_account_requests_total", (("account", "acc1"), ("side", "cdn"))): 3.0,
    }


def test_a_counter_going_down_is_seen_through_the_parser(tmp_path: Path) -> None:
    scenario = replace(draw(3, 60), accounts=("acc1",), daemon=Daemon(revisit=5), events=())
    checker = World(scenario, tmp_path).checker
    checker.started(T0, scenario.daemon)
    parser = Parser()
    for at, edge in ((T0, 0), (T0 + 15, 0), (T0 + 30, 0)):
        checker.scrape(at, parser.parse(_text(edge))[0])
    assert checker.violations == []
    checker.scrape(T0 + 45, parser.parse(_text(10))[0])
    checker.scrape(T0 + 60, parser.parse(_text(10))[0])
    checker.scrape(T0 + 75, parser.parse(_text(4))[0])
    assert [v.kind for v in checker.violations] == ["counter decreased"]
