"""The admin route table: registration, authorisation and the OpenAPI document all read it.

A route names the platform endpoint it passes through; the generic pass-through
(``handlers.passthrough``) handles it with the hooks it names, and a route whose steps
differ names its own handler."""

from __future__ import annotations

from exporter.dvr import reply as dvr
from exporter.restream import reply as rs
from exporter.talking_head import reply as th
from exporter.web.admin import handlers as h
from exporter.web.admin.core import QueryParam, Route
from exporter.web.admin.schemas import ISO_Z_STRING, SEGMENT_STRING, TASKS_QUERY_SCHEMAS
from exporter.web.admin.validation import (
    DVR_ORDER,
    HISTORY_ORDER,
    MASK_ON_CREATE,
    MASK_ON_UPDATE,
    SCHEDULE_ORDER,
    check_dvr_delete,
    check_history_query,
    check_status_query,
)
from exporter.web.admin.validation_th import (
    KNOWN_CONFIGURATION,
    NOT_CANCELED,
    TASKS_ORDER,
    VIDEO_READY,
    check_rename,
    check_tasks_query,
)
from exporter.web.masking import mask_history, mask_video_link

_ISO_Z = "YYYY-mm-ddTHH:MM:SSZ (UTC)"
_TASK_QUERY_DOC = {
    "start": "Inclusive lower date, YYYY-MM-DDThh:mm:00 with Z or +00:00 (UTC, seconds 00).",
    "end": "Exclusive upper date, same form.",
    "offset": "Number of results skipped (0 or more).",
    "limit": "Maximum number of results (1 or more).",
    "sort": "[+-]field of the video record, e.g. -duration (descending).",
    "fields": "Comma-separated extra fields of the video record, e.g. video_name,script.",
    "id": "Task identifier filter.",
}

ROUTES: tuple[Route, ...] = (
    Route(
        "GET",
        "/restream/{account}/resources",
        rs.RESTREAM_LIST,
        "List restream resources (secrets masked).",
        "restream",
    ),
    Route(
        "POST",
        "/restream/{account}/resources",
        rs.RESTREAM_CREATE,
        "Create a restream resource.",
        "restream",
        handler=h.restream_create,
        write=True,
        body="RestreamResource",
        body_required=True,
        rules=(SCHEDULE_ORDER, MASK_ON_CREATE),
    ),
    Route(
        "GET",
        "/restream/{account}/resources/{resource_id}",
        rs.RESTREAM_GET,
        "Read one restream resource (secrets masked).",
        "restream",
    ),
    Route(
        "PUT",
        "/restream/{account}/resources/{resource_id}",
        rs.RESTREAM_UPDATE,
        "Update a restream resource; a masked secret sent back keeps the stored value.",
        "restream",
        handler=h.restream_update,
        write=True,
        body="RestreamResource",
        body_required=True,
        target="resource_id",
        rules=(SCHEDULE_ORDER, MASK_ON_UPDATE),
    ),
    Route(
        "GET",
        "/restream/{account}/status",
        rs.RESTREAM_STATUS,
        "Current status of every restream target, or of one resource.",
        "restream",
        query=(QueryParam("resource_id", "Only this resource.", schema=SEGMENT_STRING),),
        check_query=check_status_query,
        params=h.status_params,
    ),
    Route(
        "GET",
        "/restream/{account}/history",
        rs.RESTREAM_HISTORY,
        "Status history of one resource's targets.",
        "restream",
        query=(
            QueryParam("resource_id", "The resource.", required=True, schema=SEGMENT_STRING),
            QueryParam("start", f"Start, {_ISO_Z}.", required=True, schema=ISO_Z_STRING),
            QueryParam("end", f"End, {_ISO_Z}.", required=True, schema=ISO_Z_STRING),
        ),
        rules=(HISTORY_ORDER,),
        check_query=check_history_query,
        params=h.history_params,
        masker=mask_history,
    ),
    Route(
        "GET",
        "/dvr/{account}/streams/{stream_name:.+}",
        dvr.DVR_GET,
        "Recorded ranges of a stream on each node (the name may contain /).",
        "dvr",
    ),
    Route(
        "DELETE",
        "/dvr/{account}/streams/{stream_name:.+}",
        dvr.DVR_DELETE,
        "Delete a range (host, from_ts, duration_sec | to_ts) or all (host, all: true).",
        "dvr",
        write=True,
        body="DvrDelete",
        body_required=True,
        target="stream_name",
        rules=(DVR_ORDER,),
        check_body=check_dvr_delete,
    ),
    Route(
        "GET",
        "/talking-head/{account}/configurations",
        th.TH_CONFIGURATIONS,
        "Voices, speaker models, backgrounds, quota.",
        "talking-head",
        handler=h.th_configurations,
    ),
    Route(
        "POST",
        "/talking-head/{account}/generate",
        th.TH_GENERATE,
        "Generate a video (at most 10 a minute per account); the task is followed.",
        "talking-head",
        handler=h.th_generate,
        write=True,
        body="GenerateRequest",
        body_required=True,
        success=202,
        limited=True,
        rules=(KNOWN_CONFIGURATION,),
    ),
    Route(
        "GET",
        "/talking-head/{account}/status/{task_id}",
        th.TH_STATUS,
        "Status of a task.",
        "talking-head",
        spend=h.th_read,
    ),
    Route(
        "DELETE",
        "/talking-head/{account}/cancel/{task_id}",
        th.TH_CANCEL,
        "Cancel a task.",
        "talking-head",
        write=True,
        target="task_id",
        rules=(NOT_CANCELED,),
        done=h.ended("canceled"),
    ),
    Route(
        "GET",
        "/talking-head/{account}/video/{task_id}",
        th.TH_VIDEO_LINK,
        "Link to the video (valid 6 hours, bound to the exporter's IP address).",
        "talking-head",
        rules=(VIDEO_READY,),
        spend=h.th_read,
        masker=mask_video_link,
    ),
    Route(
        "PATCH",
        "/talking-head/{account}/video/{task_id}",
        th.TH_RENAME,
        "Rename a video (video_name at most 35 characters).",
        "talking-head",
        write=True,
        body="RenameRequest",
        target="task_id",
        check_body=check_rename,
    ),
    Route(
        "DELETE",
        "/talking-head/{account}/video/{task_id}",
        th.TH_DELETE,
        "Delete a video.",
        "talking-head",
        write=True,
        target="task_id",
        done=h.ended("deleted"),
    ),
    Route(
        "GET",
        "/talking-head/{account}/tasks",
        th.TH_TASKS,
        "List videos, filtered, sorted and paged.",
        "talking-head",
        query=tuple(
            QueryParam(name, _TASK_QUERY_DOC[name], schema=TASKS_QUERY_SCHEMAS[name])
            for name in th.TASKS_QUERY
        ),
        rules=(TASKS_ORDER,),
        check_query=check_tasks_query,
        params=h.tasks_params,
        spend=h.th_read,
    ),
)
