"""Checking a write body's masks costs the same per entry however many entries it has."""

from __future__ import annotations

import pytest

from exporter.restream.identity import KeyFingerprint
from exporter.support.secrets import MASK
from exporter.web.admin import restore
from exporter.web.admin.validation import FieldError
from exporter.web.masking import SecretMask


class CountedError(FieldError):
    """A FieldError that counts how often any error's field is read (a scan reads them all)."""

    reads = 0

    def __getattribute__(self, name: str) -> object:
        if name == "field":
            CountedError.reads += 1
        return super().__getattribute__(name)


def body(entries: int) -> dict[str, object]:
    return {
        "name": "big",
        "restreams": [
            {"source": f"rtmp://in.example/s{i}", "target_url": f"rtmp://t.example/{MASK}{i}"}
            for i in range(entries)
        ],
    }


@pytest.mark.parametrize("entries", [100, 400])
def test_misplaced_masks_are_reported_without_scanning_the_errors(
    monkeypatch: pytest.MonkeyPatch, entries: int
) -> None:
    monkeypatch.setattr(restore, "FieldError", CountedError)
    CountedError.reads = 0
    _, errors = restore.restore_secrets(body(entries), None, SecretMask(KeyFingerprint(b"k")))
    assert [e.field for e in errors] == [f"restreams[{i}].target_url" for i in range(entries)]
    assert CountedError.reads <= 3 * entries  # one look at each, not one per pair of them
