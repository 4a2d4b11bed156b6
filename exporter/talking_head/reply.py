"""The talking-head area's replies: their types, parsing, the endpoints that give them and
the typed reads (``TalkingHeadReader``, the poller's ``TalkingHeadClient``); the admin API and
the task tracker pass the same endpoints through (``Operations.send``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from exporter.upstream.client import UpstreamClient
from exporter.upstream.endpoint import READ_LANES, Endpoint
from exporter.upstream.fields import flag, number, obj, optional_number, text

# The platform's vocabulary of the talking-head requests and records, declared here once: the
# admin API checks and documents the bodies and queries with it (web/admin/validation_th.py,
# web/admin/schemas.py).
SCRIPT_MAX = 3000  # characters of a generation's script
VIDEO_NAME_MAX = 35  # characters of a video's name
ORIENTATIONS = ("horizontal", "vertical")
FRAME_STYLES = ("rectangle", "circle")
LOCATIONS = ("upperleft", "upperright", "lowerleft", "lowerright")  # of a circle frame
ACTOR_SIZES = ("SD", "HD", "FullHD", "4K")
GENERATE_REQUIRED = ("script", "actor", "voice")
GENERATE_FIELDS = (
    "script",
    "actor",
    "voice",
    "background",
    "emotion",
    "video_name",
    "composition",
    "circle",
)
ACTOR_FIELDS = ("name", "version", "style", "shot", "size")
ACTOR_REQUIRED = ("name", "shot")
COMPOSITION_FIELDS = (
    "orientation",
    "frame_style",
    "scale",
    "crop",
    "shift",
    "location",
    "background_color",
    "border_color",
)
RECTANGLE_ONLY = ("scale", "crop", "shift")  # composition keys of a rectangle frame alone
CIRCLE_ONLY = ("location", "background_color", "border_color")  # ... of a circle frame alone
CIRCLE_FIELDS = ("location", "border_color", "background_color")
VIDEO_BASE_FIELDS = ("id", "video_url", "resolution", "duration", "date")  # every record
VIDEO_EXTRA_FIELDS = (  # a record's fields given when ``fields=`` asks for them
    "background",
    "shot",
    "script",
    "voice_name",
    "actor_name",
    "model_version",
    "video_name",
    "emotion",
    "orientation",
    "crop",
    "shift",
    "scale",
    "circle",
)
VIDEO_FIELDS = VIDEO_BASE_FIELDS + VIDEO_EXTRA_FIELDS
TASKS_QUERY = ("start", "end", "offset", "limit", "sort", "fields", "id")  # /tasks filters

_BASE = "/app/th-api/v1/accounts/{account}"
TH_CONFIGURATIONS = Endpoint(
    "talking_head", "th_configurations", "GET", _BASE + "/configurations", lanes=READ_LANES
)
TH_GENERATE = Endpoint("talking_head", "th_generate", "POST", _BASE + "/generate")
TH_STATUS = Endpoint(
    "talking_head", "th_status", "GET", _BASE + "/status/{task_id}", lanes=READ_LANES
)
TH_CANCEL = Endpoint("talking_head", "th_cancel", "DELETE", _BASE + "/cancel/{task_id}")
TH_VIDEO_LINK = Endpoint("talking_head", "th_video_link", "GET", _BASE + "/video/{task_id}")
TH_RENAME = Endpoint("talking_head", "th_rename", "PATCH", _BASE + "/video/{task_id}")
TH_DELETE = Endpoint("talking_head", "th_delete", "DELETE", _BASE + "/video/{task_id}")
TH_TASKS = Endpoint(
    "talking_head",
    "th_tasks",
    "GET",
    _BASE + "/tasks",
    params=TASKS_QUERY,
)
ENDPOINTS = (
    TH_CONFIGURATIONS,
    TH_GENERATE,
    TH_STATUS,
    TH_CANCEL,
    TH_VIDEO_LINK,
    TH_RENAME,
    TH_DELETE,
    TH_TASKS,
)


@dataclass(frozen=True)
class ThConfigurations:
    voices: dict[str, Any]
    models: dict[str, Any]
    backgrounds: dict[str, Any]
    quota_limit: float
    quota_left: float
    watermark: bool

    @property
    def model_count(self) -> int:
        """Speaker models counted per (speaker, version)."""
        return sum(len(v) if isinstance(v, dict) else 1 for v in self.models.values())


def parse_th_configurations(body: Any) -> ThConfigurations:
    d = obj(body, "talking_head", "configurations")
    quota = obj(d.get("quota"), "talking_head", "configurations.quota")
    return ThConfigurations(
        voices=obj(d.get("voices") or {}, "talking_head", "configurations.voices"),
        models=obj(d.get("models") or {}, "talking_head", "configurations.models"),
        backgrounds=obj(d.get("backgrounds") or {}, "talking_head", "configurations.backgrounds"),
        quota_limit=number(quota, "limit", "talking_head", "configurations.quota"),
        quota_left=number(quota, "left", "talking_head", "configurations.quota"),
        watermark=flag(d, "watermark", "talking_head", "configurations", default=False),
    )


def configurations_body(conf: ThConfigurations) -> dict[str, Any]:
    """A configurations reply as the platform sends it, rebuilt from what was parsed."""

    def whole(value: float) -> int | float:
        return int(value) if float(value).is_integer() else value

    return {
        "status": "ok",
        "voices": dict(conf.voices),
        "models": dict(conf.models),
        "backgrounds": dict(conf.backgrounds),
        "quota": {"limit": whole(conf.quota_limit), "left": whole(conf.quota_left)},
        "watermark": conf.watermark,
    }


@dataclass(frozen=True)
class ThTask:
    id: str
    status: str  # lower-case
    attempts: int
    message: str


def parse_th_status(body: Any) -> ThTask:
    d = obj(body, "talking_head", "status reply")
    t = obj(d.get("task"), "talking_head", "status reply.task")
    return ThTask(
        id=str(t.get("id") or ""),
        status=text(t, "status", "talking_head", "task").strip().lower(),
        attempts=int(optional_number(t, "attempts", "talking_head", "task")),
        message=str(t.get("message") or ""),
    )


class TalkingHeadReader:
    """The talking-head typed reads (the poller's ``TalkingHeadClient``), sent by ``upstream``."""

    def __init__(self, upstream: UpstreamClient) -> None:
        self._upstream = upstream

    async def th_configurations(self, account: str) -> ThConfigurations:
        return parse_th_configurations(await self._upstream.read(TH_CONFIGURATIONS, account))

    async def th_status(self, account: str, task_id: str) -> ThTask:
        return parse_th_status(await self._upstream.read(TH_STATUS, account, task_id=task_id))
