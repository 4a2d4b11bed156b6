"""The DVR area's landing summary of one account: the stream nodes that are not alive."""

from __future__ import annotations

from dataclasses import dataclass

from exporter.areakit.summary import Published, left_out, published
from exporter.dvr import families as dvr
from exporter.exposition import FamilySelection, Store, StoreKey


@dataclass(frozen=True)
class DvrSummary:
    known: bool
    stale: bool
    dead: tuple[tuple[str, str], ...]  # (stream, host) of nodes not alive
    left_out: tuple[str, ...]


def dvr_summary(p: Published, selection: FamilySelection) -> DvrSummary:
    dead = tuple((lbl["stream"], lbl["host"]) for lbl, alive in p.rows(dvr.ALIVE) if alive == 0)
    return DvrSummary(p.known, p.stale, dead, left_out(selection, (dvr.ALIVE,)))


def summary(store: Store, account: str) -> DvrSummary:
    """The landing page's DVR figures of ``account`` (``AreaDeclaration.summary``)."""
    return dvr_summary(published(store, StoreKey("dvr", account)), store.selection)
