"""Pure talking-head transform: one configurations reply -> a Fragment."""

from __future__ import annotations

from exporter.exposition import EVERYTHING, FamilySelection, Fragment
from exporter.talking_head import families as f
from exporter.talking_head.reply import ThConfigurations


def configurations_fragment(
    account: str, conf: ThConfigurations, selection: FamilySelection = EVERYTHING
) -> Fragment:
    b = selection.builder()
    b.declare(*f.SPECS)
    labels = (account,)
    b.add(f.QUOTA_LIMIT, labels, conf.quota_limit)
    b.add(f.QUOTA_LEFT, labels, conf.quota_left)
    b.add(f.WATERMARK, labels, 1 if conf.watermark else 0)
    b.add(f.VOICES, labels, len(conf.voices))
    b.add(f.MODELS, labels, conf.model_count)
    return b.build()
