"""Talking-head accounts: quota, request limits, and tasks that move with the clock.

A task is in_queue for `th_queue_seconds` after it is accepted, then processing for
`th_processing_seconds`, then processed; cancel (from in_queue or processing) makes it canceled.
"""

from __future__ import annotations

import copy
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from exporter.simulator.config import SimConfig
from exporter.simulator.hashing import hex_id
from exporter.simulator.talking_head_catalog import BACKGROUNDS, MODELS, VOICES
from exporter.simulator.talking_head_validate import Generation
from exporter.support.clock import Clock

STORED_SECONDS = 30 * 86400
LINK_SECONDS = 6 * 3600
MESSAGES = {
    "in_queue": "Task is waiting in the queue",
    "processing": "Video is being generated",
    "processed": "Video is ready",
    "canceled": "Task was cancelled by user request",
}
EXTRA_FIELDS = (
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
BASE_FIELDS = ("id", "video_url", "resolution", "duration", "date")


class LimitExceeded(Exception):
    """A documented talking-head limit would be broken (answered 429)."""


class WrongStatus(Exception):
    """An operation not allowed in the task's current status."""


@dataclass
class Task:
    id: str
    account: str
    created: float
    request: Generation
    video_name: str
    canceled_at: float | None = None

    def status(self, now: float, queue_s: float, processing_s: float) -> str:
        if self.canceled_at is not None and self.canceled_at <= now:
            return "canceled"
        if now < self.created + queue_s:
            return "in_queue"
        if now < self.created + queue_s + processing_s:
            return "processing"
        return "processed"


@dataclass
class Account:
    quota_left: int
    watermark: bool
    tasks: dict[str, Task] = field(default_factory=dict)
    generate_times: deque[float] = field(default_factory=deque)
    month: str = ""
    month_requests: int = 0
    counter: int = 0


def _iso(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


_SEED_REQUEST = Generation(
    script="Hello! This is a demo video of the simulated talking-head service.",
    voice="Alena",
    actor="Natalia",
    version="1.0.0",
    style="business",
    shot="waist",
    size="HD",
    background="office",
    emotion="neutral",
    video_name="",
    orientation="horizontal",
    frame_style="rectangle",
    scale=1.0,
    crop=1.0,
    shift=0.0,
    circle=None,
    duration=4.5,
)


class TalkingHeadState:
    """Every account's talking-head data; all times from the injected clock."""

    def __init__(self, config: SimConfig, clock: Clock) -> None:
        self.config = config
        self._clock = clock
        self.accounts: dict[str, Account] = {}
        start = clock.time()
        for i, name in enumerate(config.accounts):
            acc = Account(quota_left=config.th_quota_limit, watermark=i % 2 == 1)
            self.accounts[name] = acc
            for days, title in ((5, "Welcome"), (2, "Product update"), (1, "Weekly news")):
                task = self._new_task(name, acc, start - days * 86400, _SEED_REQUEST, title)
                acc.tasks[task.id] = task
                acc.quota_left = max(0, acc.quota_left - 1)

    def _new_task(
        self, account: str, acc: Account, created: float, g: Generation, name: str
    ) -> Task:
        acc.counter += 1
        h = hex_id(self.config.seed, "th-task", account, acc.counter)
        tid = f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"
        return Task(tid, account, created, g, name or g.video_name)

    def now(self) -> float:
        return self._clock.time()

    def count_request(self, account: str) -> None:
        """Spend one request of the monthly allowance (every talking-head request counts)."""
        acc = self.accounts[account]
        month = time.strftime("%Y-%m", time.gmtime(self.now()))
        if acc.month != month:
            acc.month, acc.month_requests = month, 0
        if acc.month_requests >= self.config.th_monthly_requests:
            raise LimitExceeded(
                f"Monthly request limit exceeded ({self.config.th_monthly_requests} requests)"
            )
        acc.month_requests += 1

    def status_text(self, status: str) -> str:
        return status.upper() if self.config.th_status_uppercase else status

    def task_status(self, task: Task) -> str:
        return task.status(
            self.now(), self.config.th_queue_seconds, self.config.th_processing_seconds
        )

    def visible(self, account: str, task_id: str) -> Task | None:
        task = self.accounts[account].tasks.get(task_id)
        if task is None or task.created + STORED_SECONDS <= self.now():
            return None
        return task

    def configurations(self, account: str) -> dict[str, Any]:
        acc = self.accounts[account]
        return {
            "status": "ok",
            "voices": copy.deepcopy(VOICES),
            "models": copy.deepcopy(MODELS),
            "backgrounds": copy.deepcopy(BACKGROUNDS),
            "quota": {"limit": self.config.th_quota_limit, "left": acc.quota_left},
            "watermark": acc.watermark,
        }

    def generate(self, account: str, g: Generation) -> Task:
        acc = self.accounts[account]
        if acc.quota_left <= 0:
            raise LimitExceeded("Quota exceeded")
        task = self._new_task(account, acc, self.now(), g, "")
        acc.tasks[task.id] = task
        acc.quota_left -= 1
        return task

    def check_generate_rate(self, account: str) -> None:
        """At most `th_generations_per_minute` generation requests in any 60 seconds."""
        times = self.accounts[account].generate_times
        now = self.now()
        while times and times[0] <= now - 60:
            times.popleft()
        if len(times) >= self.config.th_generations_per_minute:
            raise LimitExceeded(
                f"Rate limit exceeded: at most {self.config.th_generations_per_minute} "
                "generation requests per minute"
            )
        times.append(now)

    def cancel(self, task: Task) -> None:
        status = self.task_status(task)
        if status not in ("in_queue", "processing"):
            raise WrongStatus(f"Wrong task status: {self.status_text(status)}")
        task.canceled_at = self.now()

    def task_json(self, task: Task) -> dict[str, Any]:
        status = self.task_status(task)
        return {
            "id": task.id,
            "attempts": 0 if status == "in_queue" else 1,
            "status": self.status_text(status),
            "message": MESSAGES[status],
        }

    def video_url(self, task: Task) -> str:
        if self.task_status(task) != "processed":
            return ""
        return f"https://th-video.cdn.example/{task.account}/{task.id}.mp4"

    def record(self, task: Task, fields: tuple[str, ...] = ()) -> dict[str, Any]:
        g = task.request
        out: dict[str, Any] = {
            "id": task.id,
            "video_url": self.video_url(task),
            "resolution": g.resolution,
            "duration": g.duration if self.task_status(task) == "processed" else 0,
            "date": _iso(task.created),
        }
        extra: dict[str, Any] = {
            "background": g.background,
            "shot": g.shot,
            "script": g.script,
            "voice_name": g.voice,
            "actor_name": g.actor,
            "model_version": g.version,
            "video_name": task.video_name,
            "emotion": g.emotion,
            "orientation": g.orientation,
            "crop": g.crop,
            "shift": g.shift,
            "scale": g.scale,
            "circle": dict(g.circle)
            if g.circle
            else {"location": None, "border_color": None, "background_color": None},
        }
        for f in fields:
            out[f] = extra[f]
        return out

    def tasks(self, account: str) -> list[Task]:
        now = self.now()
        return [
            t for t in self.accounts[account].tasks.values() if t.created + STORED_SECONDS > now
        ]

    def delete(self, account: str, task_id: str) -> bool:
        return self.accounts[account].tasks.pop(task_id, None) is not None
