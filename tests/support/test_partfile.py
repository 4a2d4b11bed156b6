"""A file written in parts (support.partfile): unchanged parts copied from the file before,
and only from a file that is still the one written, intact."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from exporter.support.partfile import Part, PartFile, Piece


def doc(texts: dict[str, str], made: list[str]) -> list[Piece]:
    """A document of a part per entry of ``texts`` (keyed by its text), recording each made."""

    def part(name: str) -> Part:
        def make() -> str:
            made.append(name)
            return texts[name]

        return Part(texts[name].encode(), make)

    return ["[", part("a"), ",", part("b"), "]"]


def test_an_unchanged_part_is_copied_and_a_changed_one_made(tmp_path: Path) -> None:
    path = tmp_path / "f.json"
    file, made = PartFile(str(path)), []
    texts = {"a": '"alpha"', "b": '"beta"'}
    first = file.write(doc(texts, made))
    assert (first.made, first.copied, made) == (2, 0, ["a", "b"])
    made.clear()
    texts["b"] = '"beta, changed"'
    second = file.write(doc(texts, made))
    assert (second.made, second.copied, made) == (1, 1, ["b"])
    assert second.copied_bytes == len('"alpha"')
    assert path.read_bytes() == b'["alpha","beta, changed"]'
    assert second.size == path.stat().st_size


def test_a_file_replaced_by_anything_else_is_not_copied_from(tmp_path: Path) -> None:
    path = tmp_path / "f.json"
    file, made = PartFile(str(path)), []
    texts = {"a": '"alpha"', "b": '"beta"'}
    file.write(doc(texts, made))
    path.write_bytes(b'["ALPHA","BETA"]')  # another inode, size, time
    made.clear()
    assert file.write(doc(texts, made)).copied == 0
    assert path.read_bytes() == b'["alpha","beta"]'


def test_a_part_damaged_in_place_is_made_again(tmp_path: Path) -> None:
    """Same inode, size and modification time, other bytes: the CRC-32 tells."""
    path = tmp_path / "f.json"
    file, made = PartFile(str(path)), []
    texts = {"a": '"alpha"', "b": '"beta"'}
    file.write(doc(texts, made))
    st = path.stat()
    with open(path, "r+b") as fh:
        fh.seek(2)
        fh.write(b"A")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    made.clear()
    written = file.write(doc(texts, made))
    assert (written.made, written.copied, made) == (1, 1, ["a"])
    assert path.read_bytes() == b'["alpha","beta"]'


def test_a_failed_write_leaves_the_file_before_and_the_next_makes_every_part(
    tmp_path: Path,
) -> None:
    path = tmp_path / "f.json"
    file, made = PartFile(str(path)), []
    texts = {"a": '"alpha"', "b": '"beta"'}
    file.write(doc(texts, made))

    def refused() -> str:
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space"):
        file.write(["[", Part(b"other", refused), "]"])
    assert path.read_bytes() == b'["alpha","beta"]'  # never half a file
    made.clear()
    assert file.write(doc(texts, made)).made == 2
