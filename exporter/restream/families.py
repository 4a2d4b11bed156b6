"""Restream metric families: resource metadata and the status of every restream target.

Exposition example (``T`` stands for the target labels
``account="demo-media",resource_id="r1",source="rtmp://in.example/live/a",
target="rtmp://yt.example/live2",target_key="3f2a9c1b7d0e"``)::

    cdnvideo_restream_resource_info{account="demo-media",resource_id="r1",name="A",type="short"} 1
    cdnvideo_restream_resource_active{account="demo-media",resource_id="r1"} 1
    cdnvideo_restream_status_code{T} 2
    cdnvideo_restream_up{T} 0
    cdnvideo_restream_scheduled{T} 1
    cdnvideo_restream_status_info{T,code="2",description="Source stream not found"} 1
    cdnvideo_restream_status_changed_timestamp_seconds{T} 1767225000
"""

from __future__ import annotations

from exporter.exposition import MetricSpec

RESOURCE = ("account", "resource_id")
TARGET = ("account", "resource_id", "source", "target", "target_key")

RESOURCE_INFO = MetricSpec(
    "cdnvideo_restream_resource_info",
    "gauge",
    "Restream resource name and type (type passes through as reported; a URL inside either "
    "is masked as the target label is); always 1.",
    (*RESOURCE, "name", "type"),
    source="GET /resources: data.resources[].name, .type",
)
RESOURCE_ACTIVE = MetricSpec(
    "cdnvideo_restream_resource_active",
    "gauge",
    "1 when the restream resource's active flag is set, 0 when it is not.",
    RESOURCE,
    source="GET /resources: data.resources[].active",
)
STATUS_CODE = MetricSpec(
    "cdnvideo_restream_status_code",
    "gauge",
    "Current status code of a restream target: 0 OK, 2 source stream not found, "
    "3 source stream not published, 5 no status changes found, 7 restream stopped; "
    "any other code is exported as reported.",
    TARGET,
    source="GET /status: data[].status[].status.code",
)
UP = MetricSpec(
    "cdnvideo_restream_up",
    "gauge",
    "1 when the restream target's status code is 0 (OK), 0 for any other code.",
    TARGET,
    source="GET /status: data[].status[].status.code == 0",
)
SCHEDULED = MetricSpec(
    "cdnvideo_restream_scheduled",
    "gauge",
    "1 when now is inside one of the restream entry's schedule windows or the entry has "
    "no schedule, 0 otherwise.",
    TARGET,
    source="GET /resources: data.resources[].restreams[].schedule[].start, .stop",
)
STATUS_INFO = MetricSpec(
    "cdnvideo_restream_status_info",
    "gauge",
    "Current status of a restream target with its code and description (for alert text; a URL "
    "inside it is masked as the target label is); always 1.",
    (*TARGET, "code", "description"),
    source="GET /status: data[].status[].status.code, .description",
)
STATUS_CHANGED = MetricSpec(
    "cdnvideo_restream_status_changed_timestamp_seconds",
    "gauge",
    "Unix time of the latest status change of a restream target seen in its status history.",
    TARGET,
    unit="seconds",
    source="GET /history: data[].history[target_url][target_key][].time",
)

STATUS_SPECS = (RESOURCE_INFO, RESOURCE_ACTIVE, STATUS_CODE, UP, SCHEDULED, STATUS_INFO)
HISTORY_SPECS = (STATUS_CHANGED,)
SPECS = (*STATUS_SPECS, *HISTORY_SPECS)
