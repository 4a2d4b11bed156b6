"""check-config names every problem at once, with its line, and each unset ${VAR}."""

from __future__ import annotations

from pathlib import Path

import pytest

from exporter.cli import main

REPO = Path(__file__).resolve().parents[2]
CREDENTIALS = ("CDNVIDEO_TOKEN", "CDNVIDEO_USERNAME", "CDNVIDEO_PASSWORD")
ADMIN = ("CDNVIDEO_ADMIN_READ_TOKEN", "CDNVIDEO_ADMIN_WRITE_TOKEN")

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
        "admin: {enabled: true, write_token: w0123456789abcdef0123456789abcdef,"
        " read_token: '${CHECK_CONFIG_UNSET_READ}'}\n"
    )
    code, _, err = _check(path, capsys)
    assert code == 0
    assert err == "warning: admin.read_token: ${CHECK_CONFIG_UNSET_READ} is not set\n"
    code, _, err = _check(path, capsys, "--verbose")
    assert code == 0
    assert err.startswith("note: traffic.revisit_minutes: settle reads at 5 min cost ")


@pytest.mark.parametrize("shipped", ["deploy/k8s/config.yml", "deploy/docker/config.yml"])
def test_a_shipped_config_asks_only_for_what_the_enabled_parts_read(
    shipped: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Admin off: its unset tokens are no problem; a token given: the login is not asked for."""
    for var in (*CREDENTIALS, *ADMIN, "CDNVIDEO_BASE_URL", "CDNVIDEO_SHARD"):
        monkeypatch.delenv(var, raising=False)
    code, _, err = _check(REPO / shipped, capsys)
    assert code == 1
    assert [line.split(" (line")[0] for line in err.splitlines()] == [
        "config error: upstream.token: ${CDNVIDEO_TOKEN} is not set",
        "config error: upstream.username: ${CDNVIDEO_USERNAME} is not set",
        "config error: upstream.password: ${CDNVIDEO_PASSWORD} is not set",
        "config error: upstream: no credentials; set upstream.token (or CDNVIDEO_TOKEN) or "
        "upstream.username + upstream.password",
    ]
    monkeypatch.setenv("CDNVIDEO_TOKEN", "t0ken")
    code, _, err = _check(REPO / shipped, capsys)
    assert (code, err) == (0, "")


def test_a_variable_set_to_empty_is_told_from_one_not_set(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in CREDENTIALS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("CHECK_CONFIG_EMPTY_TOKEN", "")
    path = tmp_path / "config.yml"
    path.write_text("upstream:\n  token: ${CHECK_CONFIG_EMPTY_TOKEN}\n")
    code, _, err = _check(path, capsys)
    assert code == 1
    assert err.splitlines()[0] == (
        "config error: upstream.token: ${CHECK_CONFIG_EMPTY_TOKEN} is set to empty (line 2)"
    )


def test_the_keys_of_an_area_that_is_off_are_not_asked_for(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CHECK_CONFIG_UNSET_DVR", raising=False)
    path = tmp_path / "config.yml"
    conf = "upstream: {token: t0ken}\naccounts: [acme]\ndvr:\n  enabled: %s\n"
    path.write_text(conf % "false" + "  interval_seconds: ${CHECK_CONFIG_UNSET_DVR}\n")
    assert _check(path, capsys)[::2] == (0, "")
    path.write_text(conf % "true" + "  interval_seconds: ${CHECK_CONFIG_UNSET_DVR}\n")
    code, _, err = _check(path, capsys)
    assert code == 0
    assert err == "warning: dvr.interval_seconds: ${CHECK_CONFIG_UNSET_DVR} is not set\n"


@pytest.mark.parametrize("fmt", ["auto", "console", "logfmt", "json"])
def test_the_log_format_flag_takes_every_value_of_the_key(
    fmt: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "config.yml"
    path.write_text("upstream: {token: t0ken}\naccounts: [acme]\n")
    code, out, _ = _check(path, capsys, "--log.format", fmt)
    assert code == 0
    assert f"  format: {fmt}\n" in out


def test_a_token_file_means_the_login_is_not_asked_for(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in CREDENTIALS:
        monkeypatch.delenv(var, raising=False)
    token = tmp_path / "token"
    token.write_text("t0ken\n")
    path = tmp_path / "config.yml"
    path.write_text(
        f"upstream:\n  token_file: {token}\n  username: ${{CDNVIDEO_USERNAME}}\n"
        "  password: ${CDNVIDEO_PASSWORD}\naccounts: [acme]\n"
    )
    assert _check(path, capsys)[::2] == (0, "")
