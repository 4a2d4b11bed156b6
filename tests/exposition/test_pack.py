"""Compact samples, incremental packing and interned label tuples (issue 28 points 2 and 3)."""

from __future__ import annotations

import gc
import gzip
import sys
from array import array

import pytest

from exporter.exposition import Fragment, MetricSpec, Samples, Store, StoreKey
from exporter.exposition.deflate import gzip_join
from exporter.exposition.pack import CHUNK_LINES
from exporter.exposition.samples import CHUNK
from exporter.support.clock import FakeClock

SPEC = MetricSpec("cdnvideo_x_total", "counter", "x.", ("account", "resource", "side"))
KEY = StoreKey("traffic", "acme")
N = 3 * CHUNK_LINES + 17  # three whole chunks and a short one


def rows(bump: int | None = None) -> Samples:
    """N series with fresh label tuples (as a poll builds them); ``bump``: one changed value."""
    out = Samples()
    for i in range(N):
        out.append((("acme", f"r{i:05d}", "edge"), float(i + (i == bump))))
    return out


def test_samples_hold_no_object_per_sample() -> None:
    s = rows()
    assert isinstance(s.values, array)
    assert s.values.typecode == "d"
    assert len(s) == N
    assert s[5] == (("acme", "r00005", "edge"), 5.0)
    assert list(s)[:2] == [(("acme", "r00000", "edge"), 0.0), (("acme", "r00001", "edge"), 1.0)]
    assert Samples() == ()
    assert s == list(s)
    # storage: a pointer and 8 bytes a series, plus the label tuple: no pair, no float object
    per_series = s.nbytes(set()) / N
    tuple_size = sys.getsizeof(("acme", "r00000", "edge"))
    assert per_series < tuple_size + 8 + 8 + 1  # list slot (8) + double (8), list slack
    assert per_series > tuple_size


def test_only_changed_chunks_are_rendered_again() -> None:
    old = Fragment({SPEC: rows()})
    old_pieces = old.packed()[SPEC]
    assert len(old_pieces) == 4
    new = Fragment({SPEC: rows(bump=CHUNK_LINES + 3)})  # a value in the second chunk
    new_pieces = new.packed(old)[SPEC]
    assert [a is b for a, b in zip(old_pieces, new_pieces, strict=True)] == [
        True,
        False,
        True,
        True,
    ]
    # the joined body is what rendering everything anew gives
    fresh = Fragment({SPEC: rows(bump=CHUNK_LINES + 3)}).packed()[SPEC]
    assert gzip.decompress(gzip_join(list(new_pieces))) == gzip.decompress(gzip_join(list(fresh)))
    text = gzip.decompress(gzip_join(list(new_pieces))).decode()
    assert (
        f'cdnvideo_x_total{{account="acme",resource="r{CHUNK_LINES + 3:05d}",side="edge"}} ' in text
    )
    assert f"{CHUNK_LINES + 4}\n" in text


def test_label_tuples_are_taken_over_from_the_fragment_replaced() -> None:
    old = Fragment({SPEC: rows()})
    old.packed()
    new = Fragment({SPEC: rows(bump=7)})
    assert new.samples[SPEC].labels[0] is not old.samples[SPEC].labels[0]
    new.packed(old)
    assert all(
        a is b for a, b in zip(new.samples[SPEC].labels, old.samples[SPEC].labels, strict=True)
    )
    assert new.samples[SPEC][7] == (("acme", "r00007", "edge"), 8.0)  # values are its own


def test_a_series_added_in_front_renders_everything_again_and_stays_correct() -> None:
    old = Fragment({SPEC: rows()})
    old.packed()
    shifted = Samples([(("acme", "a-first", "edge"), 1.0), *rows()])
    new = Fragment({SPEC: shifted})
    pieces = new.packed(old)[SPEC]
    assert not set(map(id, pieces)) & set(map(id, old.packed()[SPEC]))
    assert gzip.decompress(gzip_join(list(pieces))).count(b"\n") == N + 1


def test_the_store_packs_each_key_against_what_it_rendered_last() -> None:
    store = Store(FakeClock())
    store.publish(KEY, Fragment({SPEC: rows()}))
    first = store.render_sync()
    before = store.fragment(KEY)
    assert before is not None
    store.publish(KEY, Fragment({SPEC: rows(bump=2)}))
    second = store.render_sync()
    after = store.fragment(KEY)
    assert after is not None
    kept = [a is b for a, b in zip(before.packed()[SPEC], after.packed()[SPEC], strict=True)]
    assert kept == [False, True, True, True]
    assert second.plain != first.plain
    assert second.plain.replace(b"} 3\n", b"} 2\n", 1) == first.plain


def test_packed_labels_leave_the_collectors_view() -> None:
    """A list of label tuples is traversed by every full collection (10 ms at 5,000 resources
    each time); once packed the chunks are kept in a tuple, which the collector stops tracking."""
    frag = Fragment({SPEC: rows()})
    samples = frag.samples[SPEC]
    assert gc.is_tracked(samples.labels.chunks)
    frag.packed()
    gc.collect()  # the inner tuples stop being tracked; the outer ones at the next collections
    gc.collect()
    gc.collect()
    assert isinstance(samples.labels.chunks, tuple)
    assert not gc.is_tracked(samples.labels.chunks)
    assert not any(gc.is_tracked(c) for c in samples.labels.chunks)
    assert samples[N - 1] == (("acme", f"r{N - 1:05d}", "edge"), float(N - 1))
    with pytest.raises(TypeError, match="frozen once packed"):
        samples.append((("acme", "late", "edge"), 1.0))


def _largest_tracked(obj: object) -> int:
    """The most references any container the collector tracks holds, in ``obj`` and below it
    (label tuples excluded: a handful of strings each)."""
    largest = 0
    for ref in gc.get_referents(obj):
        if isinstance(ref, (list, tuple)) and gc.is_tracked(ref) and len(ref) > 8:
            largest = max(largest, len(ref), _largest_tracked(ref))
    return largest


def test_no_container_of_a_family_holds_more_than_a_chunk() -> None:
    """A young or middle collection visits every reference of the containers it meets and
    stops every thread, the event loop's too: a family of 220,000 series in one list or tuple
    held the loop 7 ms each time. Built, copied and packed, a family's label storage holds
    no tracked container of more than ``CHUNK`` references."""
    n = 5 * CHUNK + 7
    samples = Samples()
    for i in range(n):
        samples.append((("acme", f"r{i:06d}", "edge"), float(i)))
        if i in (CHUNK - 1, CHUNK, 3 * CHUNK + 5):
            assert _largest_tracked(samples.labels) <= CHUNK
    assert _largest_tracked(samples.labels) <= CHUNK
    copied = samples.copy()
    assert list(copied) == list(samples)
    copied.append((("acme", "one-more", "edge"), 1.0))
    assert len(copied) == n + 1
    assert len(samples) == n
    frag = Fragment({SPEC: samples})
    frag.packed()
    labels = frag.samples[SPEC].labels
    assert labels.frozen
    assert len(labels.chunks) == 6
    assert _largest_tracked(labels) <= CHUNK
    assert labels[n - 1] == ("acme", f"r{n - 1:06d}", "edge")
    assert labels[-1] == labels[n - 1]
    assert labels[CHUNK] == ("acme", f"r{CHUNK:06d}", "edge")
    assert labels[CHUNK - 1 : CHUNK + 1] == [
        ("acme", f"r{CHUNK - 1:06d}", "edge"),
        ("acme", f"r{CHUNK:06d}", "edge"),
    ]
    reopened = frag.samples[SPEC].copy()  # a frozen family copied is open again
    reopened.append((("acme", "after", "edge"), 2.0))
    assert reopened.labels[n] == ("acme", "after", "edge")
    assert _largest_tracked(reopened.labels) <= CHUNK
    with pytest.raises(IndexError):
        labels[n]


def test_label_tuples_are_taken_over_as_they_are_added() -> None:
    """A poll building against the fragment it replaces frees each equal label tuple at once
    (the peak of a refresh holds one set of tuples, not two), and stops referring to that
    fragment once packed."""
    old = Fragment({SPEC: rows()})
    old.packed()
    before = old.samples[SPEC]
    built = Samples(like=before)
    for i in range(N):
        built.append((("acme", f"r{i:05d}", "edge"), float(i)))
    built.append((("acme", "new", "edge"), 1.0))  # past the end of the previous one
    assert all(built.labels[i] is before.labels[i] for i in range(N))
    assert built.labels[N] == ("acme", "new", "edge")
    assert built.values[N] == 1.0
    changed = Samples(like=before)
    changed.append((("acme", "other", "edge"), 0.0))  # not equal: its own tuple is kept
    assert changed.labels[0] is not before.labels[0]
    assert changed.labels[0] == ("acme", "other", "edge")
    new = Fragment({SPEC: built})
    new.packed(old)
    assert new.samples[SPEC].like is None


def test_label_tuples_in_a_new_order_are_taken_over_by_group() -> None:
    """Traffic gauges come ranked by traffic, in another order each minute: with ``group``
    each resource's rows are found where they were, so no second set of tuples is held
    while the poll builds (at 5,000 resources ~25 MB of peak); without it, positions only."""
    old = Samples()
    for i in range(N):
        for side in ("edge", "origin"):
            old.append((("acme", f"r{i:05d}", side), float(i)))
    order = [*range(N - 1, -1, -1)]  # reversed ranking
    grouped = Samples(like=old, group=1)
    positional = Samples(like=old)
    for i in order:
        sides = ("edge",) if i == 3 else ("edge", "origin")  # one row missing
        for side in sides:
            grouped.append((("acme", f"r{i:05d}", side), 2.0))
            positional.append((("acme", f"r{i:05d}", side), 2.0))
    grouped.append((("acme", "new", "edge"), 1.0))
    taken = {id(t) for t in old.labels}
    assert sum(id(t) in taken for t in grouped.labels) == 2 * N - 1
    assert grouped.labels[-1] == ("acme", "new", "edge")
    assert id(grouped.labels[-1]) not in taken
    assert sum(id(t) in taken for t in positional.labels) < N // 2
    assert list(grouped.labels[:-1]) == list(positional.labels)  # the same series either way
    assert list(grouped.values[:-1]) == list(positional.values)
    grouped.release()
    assert grouped.like is None


def test_a_traffic_fragment_built_against_the_previous_one_shares_its_tuples() -> None:
    from exporter.traffic.counters import Series
    from exporter.traffic.families import RESOURCE
    from exporter.traffic.ledger import AccountLedger
    from exporter.traffic.parse import COUNT_INDEX, blank
    from exporter.traffic.transform import build_fragment

    led = AccountLedger()
    for i in range(50):
        s = led.series[f"r{i}"] = Series(f"n{i}", f"c{i}.example")
        s.values = blank()
        s.values[COUNT_INDEX["edge_status_200"]] = float(i)
        s.shown[COUNT_INDEX["edge_status_200"]] = 1
    first = build_fragment("acme", led, None)
    first.packed()
    second = build_fragment("acme", led, None, previous=first)
    spec = RESOURCE.responses_total
    a, b = first.samples[spec], second.samples[spec]
    assert len(b) == 50
    assert all(x is y for x, y in zip(a.labels, b.labels, strict=True))
    assert list(a.values) == list(b.values) == [float(k[1:]) for k in sorted(led.series)]
    assert second.rendered() == first.rendered()
