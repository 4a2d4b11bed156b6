"""Talking-head metric families: quota, watermark and catalogue size per account.

Exposition example::

    cdnvideo_talking_head_quota_limit{account="demo-media"} 100
    cdnvideo_talking_head_quota_left{account="demo-media"} 87
    cdnvideo_talking_head_watermark{account="demo-media"} 1
    cdnvideo_talking_head_voices{account="demo-media"} 4
    cdnvideo_talking_head_models{account="demo-media"} 3
"""

from __future__ import annotations

from exporter.exposition import MetricSpec

ACCOUNT = ("account",)

QUOTA_LIMIT = MetricSpec(
    "cdnvideo_talking_head_quota_limit",
    "gauge",
    "Talking-head generation quota of the account, as reported (the unit is not documented).",
    ACCOUNT,
    source="GET /configurations: quota.limit",
)
QUOTA_LEFT = MetricSpec(
    "cdnvideo_talking_head_quota_left",
    "gauge",
    "Talking-head generation quota the account has left, in the unit of the limit.",
    ACCOUNT,
    source="GET /configurations: quota.left",
)
WATERMARK = MetricSpec(
    "cdnvideo_talking_head_watermark",
    "gauge",
    "1 when generated videos carry a watermark, 0 when they do not.",
    ACCOUNT,
    source="GET /configurations: watermark",
)
VOICES = MetricSpec(
    "cdnvideo_talking_head_voices",
    "gauge",
    "Number of voices the account can use.",
    ACCOUNT,
    source="GET /configurations: len(voices)",
)
MODELS = MetricSpec(
    "cdnvideo_talking_head_models",
    "gauge",
    "Number of speaker models the account can use, counted per speaker and version.",
    ACCOUNT,
    source="GET /configurations: models (speakers x versions)",
)

SPECS = (QUOTA_LIMIT, QUOTA_LEFT, WATERMARK, VOICES, MODELS)
