"""What ``cdnvideo-exporter demo`` prints for a person before the first look at /metrics."""

from __future__ import annotations

from pathlib import Path

from tests.web.admin.demo_proc import running_demo


def test_the_banner_says_why_a_new_counter_first_reads_0(tmp_path: Path) -> None:
    """issue 51, point 9: the first curl of /metrics shows new traffic counters at 0."""
    with running_demo(tmp_path):
        banner = (tmp_path / "demo.out").read_text()
    (line,) = [x for x in banner.splitlines() if x.lstrip().startswith("counters")]
    assert "reads 0 until a scrape has read that 0" in line
    assert "increase()" in line
