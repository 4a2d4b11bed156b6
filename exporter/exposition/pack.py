"""Render and compress a family in chunks, again only where its values changed.

A family is cut into chunks of ``CHUNK_LINES`` series. A chunk is compressed into a piece of
its own (``deflate.Piece``: raw deflate ending in a sync flush, joinable into one gzip body),
so when a fragment is packed against the one it replaces, a chunk whose label tuples and
values are equal to the previous chunk at the same place keeps the previous piece: only the
chunks whose values changed are rendered and compressed again. Equal label tuples are also
taken over from the previous fragment (interned; ``samples.Samples``).

Compression runs on a thread of its own (zlib releases the GIL), so chunk N is compressed
while chunk N+1 is rendered; at most ``PENDING`` chunks wait for it. Rendering stays in the
calling thread (a worker, never the event loop), one chunk's text at a time. See
docs/performance.md#incremental-packing-in-chunks.
"""

from __future__ import annotations

import threading
from array import array
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

from exporter.exposition.deflate import Piece, deflate
from exporter.exposition.samples import CHUNK, Labels, Samples

CHUNK_LINES = CHUNK  # long enough that the compressor's restart at each chunk costs little
PENDING = 4  # rendered chunks waiting for compression, at most

_lock = threading.Lock()
_compressor: ThreadPoolExecutor | None = None


def _executor() -> ThreadPoolExecutor:
    global _compressor
    with _lock:
        if _compressor is None:
            _compressor = ThreadPoolExecutor(1, thread_name_prefix="deflate")
        return _compressor


Render = Callable[[Sequence[tuple[str, ...]], "array[float]"], bytes]  # a chunk's text


def pack_family(
    render: Render,
    rows: Samples,
    old: Samples | None = None,
    old_pieces: Sequence[Piece] = (),
) -> tuple[Piece, ...]:
    """The pieces of one family, chunk by chunk; ``old``/``old_pieces``: the same family in
    the fragment this one replaces, and its pieces."""
    n = len(rows)
    pending: deque[Future[Piece]] = deque()
    out: list[Piece | Future[Piece]] = []
    kept: list[tuple[tuple[str, ...], ...]] = []  # each chunk's label tuples, interned
    for k, a in enumerate(range(0, n, CHUNK_LINES)):
        b = min(a + CHUNK_LINES, n)
        labels = rows.labels.chunk(k)
        # a tuple sliced whole is the tuple itself
        before = old.labels.chunk(k)[: len(labels)] if old is not None else ()
        same_labels = old is not None and labels == before
        if same_labels:
            labels = before  # intern: the tuples the poll built are freed
        kept.append(labels)
        if same_labels and old is not None:
            same_chunk = k < len(old_pieces) and min(a + CHUNK_LINES, len(old)) == b
            if same_chunk and rows.values[a:b] == old.values[a:b]:
                out.append(old_pieces[k])
                continue
        text = render(labels, rows.values[a:b])
        future = _executor().submit(deflate, text)
        out.append(future)
        pending.append(future)
        if len(pending) > PENDING:
            pending.popleft().result()
    # Chunks of label tuples, no container larger than one (``samples.Labels``), in a tuple
    # the collector stops tracking after its first visit.
    rows.labels = Labels.of_chunks(kept)
    rows.release()  # the previous fragment is not kept alive by this one
    return tuple(p.result() if isinstance(p, Future) else p for p in out)
