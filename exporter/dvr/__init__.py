"""DVR area: per stream and node liveness and archive extent of the configured streams."""

from exporter.dvr.families import SPECS
from exporter.dvr.poller import DvrPoller, DvrStreamsFailed, store_key
from exporter.dvr.transform import dvr_fragment, last_recording_end

__all__ = [
    "SPECS",
    "DvrPoller",
    "DvrStreamsFailed",
    "dvr_fragment",
    "last_recording_end",
    "store_key",
]
