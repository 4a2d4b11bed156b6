"""Talking-head area: quota, watermark and catalogue size of each account."""

from exporter.talking_head.families import SPECS
from exporter.talking_head.poller import TalkingHeadPoller, requests_per_month, store_key
from exporter.talking_head.transform import configurations_fragment

__all__ = [
    "SPECS",
    "TalkingHeadPoller",
    "configurations_fragment",
    "requests_per_month",
    "store_key",
]
