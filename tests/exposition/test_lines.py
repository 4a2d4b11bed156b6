"""A chunk rendered by maps over memoised texts is the text written line by line."""

from __future__ import annotations

import math
import random
from array import array

import pytest

from exporter.exposition.lines import Lines, Texts, escape, format_value, values_text
from exporter.exposition.model import MetricSpec, render_samples

SPECIAL = (
    0.0,
    -0.0,
    1.0,
    -3.0,
    0.5,
    1e-05,
    1e15,
    1e15 - 1,
    -1e15,
    1e16,
    1e20,
    2.5e15 + 0.5,
    float("nan"),
    float("inf"),
    float("-inf"),
)
LABEL_VALUES = ("", "a", 'q"uote', "back\\slash", "new\nline", "www.acme.example", "404", "é")


def by_line(
    name: str, keys: tuple[str, ...], labels: list[tuple[str, ...]], values: list[float]
) -> bytes:
    """The text as a line by line renderer writes it (the reference)."""
    out = []
    for label_values, value in zip(labels, values, strict=True):
        if keys:
            pairs = ",".join(f'{k}="{escape(v)}"' for k, v in zip(keys, label_values, strict=True))
            out.append(f"{name}{{{pairs}}} {format_value(value)}\n")
        else:
            out.append(f"{name} {format_value(value)}\n")
    return "".join(out).encode()


def random_value(rng: random.Random, kind: int) -> float:
    if kind == 0:
        return float(rng.randrange(10**12))
    if kind == 1:
        return rng.random() * 10 ** rng.randrange(-6, 18)
    if kind == 2:
        return rng.choice(SPECIAL)
    return rng.randrange(10**4) / 60


@pytest.mark.parametrize("seed", range(40))
def test_a_chunk_is_the_line_by_line_text(seed: int) -> None:
    rng = random.Random(seed)
    keys = tuple(f"k{i}" for i in range(rng.randrange(7)))
    kinds = rng.sample(range(4), rng.randrange(1, 5))
    count = rng.randrange(1, 300)
    labels = [tuple(rng.choice(LABEL_VALUES) for _ in keys) for _ in range(count)]
    values = [random_value(rng, rng.choice(kinds)) for _ in range(count)]
    lines = Lines("cdnvideo_x", keys, Texts())
    assert lines.render(labels, array("d", values)) == by_line("cdnvideo_x", keys, labels, values)


@pytest.mark.parametrize("value", SPECIAL)
def test_each_value_alone_and_among_others_is_format_value(value: float) -> None:
    for around in ([], [1.0, 2.0], [0.25], [1.0, 0.25]):
        texts = values_text(array("d", [*around, value, *around]))
        assert texts[len(around)] == format_value(value) + "\n"


def test_families_sharing_texts_render_each_its_own_name_and_labels() -> None:
    texts = Texts()
    a = Lines("cdnvideo_a", ("account", "resource", "side"), texts)
    b = Lines("cdnvideo_b", ("account", "resource", "side", "code"), texts)
    c = Lines("cdnvideo_c", ("side",), texts)
    rows = [("acme", "1", "edge"), ("acme", "2", "origin")]
    assert a.render(rows, array("d", [1, 2])) == (
        b'cdnvideo_a{account="acme",resource="1",side="edge"} 1\n'
        b'cdnvideo_a{account="acme",resource="2",side="origin"} 2\n'
    )
    assert b.render([("acme", "1", "edge", "404")], array("d", [0.5])) == (
        b'cdnvideo_b{account="acme",resource="1",side="edge",code="404"} 0.5\n'
    )
    assert c.render([("edge",)], array("d", [math.inf])) == b'cdnvideo_c{side="edge"} +Inf\n'


def test_render_samples_takes_ints_and_floats_alike() -> None:
    spec = MetricSpec("cdnvideo_y", "gauge", "y.", ("side",))
    rows = [(("edge",), 7), (("origin",), 7.0), (("x",), 0.125)]
    assert render_samples(spec, rows) == (
        b'cdnvideo_y{side="edge"} 7\ncdnvideo_y{side="origin"} 7\ncdnvideo_y{side="x"} 0.125\n'
    )
