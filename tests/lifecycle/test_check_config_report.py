"""check-config names every problem at once, with its line, and each unset ${VAR}."""

from __future__ import annotations

from pathlib import Path

import pytest

from exporter.cli import main

THREE_MISTAKES = """\
upstream:
  token: ${CHECK_CONFIG_UNSET_TOKEN}
accounts: [acme, acme]
traffic:
  delay_seconds: -5
dvr: {interval_seconds: 0}
lisen: 127.0.0.1:9877
"""


def _check(path: Path, capsys: pytest.CaptureFixture[str], *flags: str) -> tuple[int, str, str]:
    code = main(["check-config", "--config.file", str(path), *flags])
    out, err = capsys.readouterr()
    return code, out, err


def test_every_error_is_reported_with_its_line_and_the_unset_variable(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CHECK_CONFIG_UNSET_TOKEN", raising=False)
    monkeypatch.delenv("CDNVIDEO_TOKEN", raising=False)
    path = tmp_path / "config.yml"
    path.write_text(THREE_MISTAKES)
    code, out, err = _check(path, capsys)
    assert (code, out) == (1, "")
    assert err.splitlines() == [
        "config error: upstream.token: ${CHECK_CONFIG_UNSET_TOKEN} is not set (line 2)",
        "config error: lisen: unknown key (did you mean 'listen'?) (line 7)",
        "config error: upstream: no credentials; set upstream.token (or CDNVIDEO_TOKEN) or "
        "upstream.username + upstream.password (line 1)",
        "config error: accounts[1].name: 'acme' is listed twice (line 3)",
        "config error: traffic.delay_seconds: must be 0 or more, got -5 (line 5)",
        "config error: dvr.interval_seconds: must be greater than 0, got 0.0 (line 6)",
    ]


def test_notes_only_with_verbose_and_unset_variables_warned(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CHECK_CONFIG_UNSET_READ", raising=False)
    path = tmp_path / "config.yml"
    path.write_text(
        "upstream: {token: t0ken}\naccounts: [acme]\n"
        "admin: {read_token: '${CHECK_CONFIG_UNSET_READ}'}\n"
    )
    code, _, err = _check(path, capsys)
    assert code == 0
    assert err == "warning: admin.read_token: ${CHECK_CONFIG_UNSET_READ} is not set\n"
    code, _, err = _check(path, capsys, "--verbose")
    assert code == 0
    assert err.startswith("note: traffic.revisit_minutes: settle reads at 5 min cost ")
