"""The talking-head area as the daemon runs it: quota and catalogue, and the task tracker."""

from __future__ import annotations

from exporter.areakit import AreaContext, Job, QuietArea, afforded
from exporter.config import Settings
from exporter.talking_head.poller import TalkingHeadPoller
from exporter.talking_head.reply import TalkingHeadReader
from exporter.talking_head.settings import TALKING_HEAD_SECTION
from exporter.talking_head.tasks import TaskTracker


class TalkingHeadArea(QuietArea):
    """Talking-head quota and catalogue, and the tasks submitted through the admin surface.

    The admin surface uses it directly: the cached catalogue (``poller``) to check generate
    requests, ``tracker`` to follow the tasks it submits, ``refresh_quota`` after one."""

    name = "talking_head"
    title = "Talking head"

    def __init__(self, ctx: AreaContext) -> None:
        self._ctx = ctx
        self.poller = TalkingHeadPoller(
            TalkingHeadReader(ctx.client),
            ctx.store,
            ctx.clock,
            TALKING_HEAD_SECTION.of(ctx.settings),
        )
        self.tracker = TaskTracker(ctx)

    def enabled(self, settings: Settings) -> bool:
        return TALKING_HEAD_SECTION.of(settings).enabled

    def jobs(self, account: str) -> list[Job]:
        th = afforded(self._ctx.client.budget, account, self.name, lambda: 1, self.poller.poll)
        return [
            Job(
                self.name, account, TALKING_HEAD_SECTION.of(self._ctx.settings).interval_seconds, th
            )
        ]

    async def refresh_quota(self, account: str) -> None:
        """Poll the account's configurations now (after a generate spent quota)."""
        await self._ctx.runner.run(self.name, account, lambda: self.poller.poll(account))

    def forget(self, account: str) -> None:
        self.poller.forget(account)
        self.tracker.forget(account)
