"""The talking-head replies' parsing (exporter/talking_head/reply.py)."""

from __future__ import annotations

from exporter.talking_head import reply as th_reply


def test_task_status_is_lower_cased() -> None:
    task = th_reply.parse_th_status({"status": "ok", "task": {"id": "t", "status": " CANCELED "}})
    assert (task.status, task.attempts, task.message) == ("canceled", 0, "")
