"""The exposition for a fixed simulator and clock equals tests/golden/exposition.prom, byte for
byte. After a deliberate metric change run ``make golden`` and review the diff."""

from __future__ import annotations

import difflib

from tests.golden.golden import GOLDEN, exposition, normalise


async def test_the_exposition_equals_the_golden_file() -> None:
    now = await exposition()
    golden = GOLDEN.read_text(encoding="utf-8")
    diff = "\n".join(
        difflib.unified_diff(golden.splitlines(), now.splitlines(), "golden", "now", n=1)
    )
    assert now == golden, f"the exposition changed; if meant, run `make golden`:\n{diff}"


def test_the_golden_file_covers_every_polled_area() -> None:
    golden = GOLDEN.read_text(encoding="utf-8")
    for prefix in (
        "cdnvideo_account_requests_total{",
        "cdnvideo_resource_responses_total{",
        "cdnvideo_resource_responses_by_class_total{",
        "cdnvideo_resource_info{",
        "cdnvideo_traffic_late_requests_total{",
        "cdnvideo_restream_status_code{",
        "cdnvideo_restream_status_changed_timestamp_seconds{",
        "cdnvideo_dvr_alive{",
        "cdnvideo_talking_head_quota_left{",
        'cdnvideo_up{account="demo-media",area="talking_head"} 1.0',
        "cdnvideo_exporter_build_info{",
    ):
        assert f"\n{prefix}" in golden, prefix


def test_durations_are_normalised_and_nothing_else() -> None:
    text = (
        "# HELP cdnvideo_poll_duration_seconds x\n"
        "# TYPE cdnvideo_poll_duration_seconds histogram\n"
        'cdnvideo_poll_duration_seconds_bucket{area="dvr",le="0.05"} 3.0\n'
        'cdnvideo_poll_duration_seconds_bucket{area="dvr",le="+Inf"} 5.0\n'
        'cdnvideo_poll_duration_seconds_count{area="dvr"} 5.0\n'
        'cdnvideo_poll_duration_seconds_sum{area="dvr"} 0.123\n'
        'cdnvideo_dvr_window{account="a",stream="s",host="h"} 0.123\n'
    )
    assert normalise(text).splitlines()[2:] == [
        'cdnvideo_poll_duration_seconds_bucket{area="dvr",le="0.05"} 5.0',
        'cdnvideo_poll_duration_seconds_bucket{area="dvr",le="+Inf"} 5.0',
        'cdnvideo_poll_duration_seconds_count{area="dvr"} 5.0',
        'cdnvideo_poll_duration_seconds_sum{area="dvr"} 0.0',
        'cdnvideo_dvr_window{account="a",stream="s",host="h"} 0.123',
    ]
