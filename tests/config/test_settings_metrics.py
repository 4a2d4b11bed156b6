"""``metrics.include`` / ``metrics.exclude`` and the per-resource granularity keys: parsed,
refused with a message naming the key, and reported by check-config."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from exporter.cli import main
from exporter.config import ConfigError, parse_config
from exporter.docgen.catalogue import entries
from exporter.docgen.selection import family_selection_warnings
from exporter.exposition import FamilySelection
from exporter.traffic.settings import TRAFFIC_SECTION
from tests.config.test_loader import refused, with_token


def test_defaults_export_everything_at_full_granularity() -> None:
    s = parse_config(with_token(), {})
    assert (s.metrics.include, s.metrics.exclude) == ((), ())
    assert (
        TRAFFIC_SECTION.of(s).resource_status_codes,
        TRAFFIC_SECTION.of(s).resource_request_times,
    ) == ("codes", True)
    assert family_selection_warnings(s) == []


def test_patterns_and_granularity_are_read() -> None:
    s = parse_config(
        with_token(
            metrics={"include": ["^cdnvideo_account_", "restream"], "exclude": "_per_second$"},
            traffic={"resource_status_codes": "classes", "resource_request_times": False},
        ),
        {},
    )
    assert s.metrics.include == ("^cdnvideo_account_", "restream")
    assert s.metrics.exclude == ("_per_second$",)  # one pattern where a list was meant
    assert TRAFFIC_SECTION.of(s).resource_status_codes == "classes"
    assert TRAFFIC_SECTION.of(s).resource_request_times is False


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            {"metrics": {"exclude": ["ok", "cdnvideo_(unclosed"]}},
            "metrics.exclude[1]: not a valid regular expression (missing ), unterminated",
        ),
        (
            {"metrics": {"include": [""]}},
            "metrics.include: expected a list of non-empty strings, got ['']",
        ),
        (
            {"metrics": {"drop": ["x"]}},
            "metrics.drop: unknown key",
        ),
        (
            {"traffic": {"resource_status_codes": "families"}},
            "traffic.resource_status_codes: expected codes or classes, got 'families'",
        ),
    ],
)
def test_bad_values_are_refused_by_key(raw: dict[str, object], message: str) -> None:
    assert refused(with_token(**raw)).startswith(message)


def test_a_pattern_that_would_take_a_health_family_away_is_reported() -> None:
    s = parse_config(with_token(metrics={"exclude": ["^cdnvideo_up$", "nothing_like_this"]}), {})
    assert family_selection_warnings(s) == [
        "metrics.exclude[1]: 'nothing_like_this' matches no metric family",
        "metrics.exclude[0]: '^cdnvideo_up$' matches health families, which are always "
        "exported: cdnvideo_up",
    ]
    only = parse_config(with_token(metrics={"include": ["^cdnvideo_account_"]}), {})
    health = [e.name for e in entries() if e.area == "exporter"]
    assert len(health) > 10
    assert {"cdnvideo_up", "cdnvideo_exporter_build_info"} <= set(health)
    assert family_selection_warnings(only) == [
        "metrics.include: health families are always exported, also those it does not match: "
        + ", ".join(health)
    ]


def test_check_config_prints_the_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(with_token(metrics={"exclude": ["^cdnvideo_up$"]})))
    assert main(["check-config", "--config", str(path)]) == 0
    err = capsys.readouterr().err
    assert "warning: metrics.exclude[0]: '^cdnvideo_up$' matches health families" in err


def test_selection_semantics() -> None:
    sel = FamilySelection(include=["^cdnvideo_resource_"], exclude=["_per_second$"])
    assert sel.wants("cdnvideo_resource_requests_total")
    assert not sel.wants("cdnvideo_resource_requests_per_second")  # excluded after include
    assert not sel.wants("cdnvideo_account_requests_total")  # not included
    assert FamilySelection(exclude=["requests"]).wants("cdnvideo_account_responses_total")
    assert not FamilySelection(exclude=["requests"]).wants("cdnvideo_account_requests_total")
    assert FamilySelection().everything
    with pytest.raises(ConfigError):
        parse_config(with_token(metrics={"include": ["("]}), {})
