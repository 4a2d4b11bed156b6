"""DVR metric families: the recording archive of each configured stream on each node.

Exposition example::

    cdnvideo_dvr_alive{account="demo-media",stream="live/main",host="node-1"} 1
    cdnvideo_dvr_enabled{account="demo-media",stream="live/main",host="node-1"} 1
    cdnvideo_dvr_window{account="demo-media",stream="live/main",host="node-1"} 7200
    cdnvideo_dvr_recorded_seconds{account="demo-media",stream="live/main",host="node-1"} 7140
    cdnvideo_dvr_ranges{account="demo-media",stream="live/main",host="node-1"} 2
    cdnvideo_dvr_first_recording_timestamp_seconds{...,host="node-1"} 1767218400
    cdnvideo_dvr_last_recording_end_timestamp_seconds{...,host="node-1"} 1767225600
"""

from __future__ import annotations

from exporter.exposition import MetricSpec

NODE = ("account", "stream", "host")

ALIVE = MetricSpec(
    "cdnvideo_dvr_alive",
    "gauge",
    "1 when the node reports the stream alive, 0 when it does not.",
    NODE,
    source="GET /streams/<stream>: data[].is_alive",
)
ENABLED = MetricSpec(
    "cdnvideo_dvr_enabled",
    "gauge",
    "1 when DVR is enabled for the stream on the node, 0 when it is not.",
    NODE,
    source="data[].dvr.enabled",
)
WINDOW = MetricSpec(
    "cdnvideo_dvr_window",
    "gauge",
    "DVR depth of the stream on the node, as reported (the platform does not document the "
    "unit; seconds on the simulator).",
    NODE,
    source="data[].dvr.window",
)
RECORDED = MetricSpec(
    "cdnvideo_dvr_recorded_seconds",
    "gauge",
    "Total recorded duration of the archive on the node, breaks excluded.",
    NODE,
    unit="seconds",
    source="data[].dvr.duration",
)
RANGES = MetricSpec(
    "cdnvideo_dvr_ranges",
    "gauge",
    "Number of recorded periods (ranges) in the archive on the node.",
    NODE,
    source="len(data[].dvr.ranges)",
)
FIRST_RECORDING = MetricSpec(
    "cdnvideo_dvr_first_recording_timestamp_seconds",
    "gauge",
    "Unix time of the first recording in the archive on the node (absent while it is empty).",
    NODE,
    unit="seconds",
    source="data[].dvr.from",
)
LAST_RECORDING_END = MetricSpec(
    "cdnvideo_dvr_last_recording_end_timestamp_seconds",
    "gauge",
    "Unix time at which the latest recorded period on the node ends (absent without ranges).",
    NODE,
    unit="seconds",
    source="max(data[].dvr.ranges[].from + .duration)",
)

SPECS = (ALIVE, ENABLED, WINDOW, RECORDED, RANGES, FIRST_RECORDING, LAST_RECORDING_END)
