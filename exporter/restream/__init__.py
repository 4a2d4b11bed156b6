"""Restream area: resource metadata, target status and status-change times as metrics."""

from exporter.restream.families import SPECS
from exporter.restream.identity import KeyFingerprint
from exporter.restream.poller import RestreamPoller, history_key, status_key
from exporter.restream.transform import Change, fold_history, history_fragment, status_fragment

__all__ = [
    "SPECS",
    "Change",
    "KeyFingerprint",
    "RestreamPoller",
    "fold_history",
    "history_fragment",
    "history_key",
    "status_fragment",
    "status_key",
]
