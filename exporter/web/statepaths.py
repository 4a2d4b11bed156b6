"""The files the exporter keeps state in, checked before it starts counting: the traffic
state file and its charts next to it, and the admin surface's talking-head reads."""

from __future__ import annotations

from exporter.config import Settings
from exporter.support.writable import problem
from exporter.traffic.history_file import charts_path
from exporter.traffic.settings import TRAFFIC_SECTION
from exporter.web.admin.readbudget import state_path


def state_files(settings: Settings) -> list[tuple[str, str]]:
    """(config key, path) of every state file the settings name, in the order checked."""
    traffic = TRAFFIC_SECTION.of(settings).state_file
    files = []
    if traffic:
        files += [("traffic.state_file", traffic), ("traffic.state_file", charts_path(traffic))]
    admin = state_path(settings)
    if admin and settings.admin.enabled:
        key = "admin.state_file" if settings.admin.state_file else "traffic.state_file"
        files.append((key, admin))
    return files


def state_file_problems(settings: Settings, create: bool) -> list[str]:
    """One line per state file that cannot be written (``create``: its missing directories
    are made first), naming the key and the path."""
    out = []
    for key, path in state_files(settings):
        why = problem(path, create)
        if why is not None:
            out.append(f"{key}: {path} cannot be written ({why})")
    return out
