"""``run --web.config.file`` / ``web_config_file``: a bad file, certificate or key stops
start-up with a message naming the problem; check-config checks the file too."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from exporter.cli import main
from tests.web.tls_certs import make_certs


def config(tmp_path: Path, **extra: str) -> str:
    path = tmp_path / "config.yml"
    doc = {"upstream": {"token": "t0ken-for-the-cli-test"}, "listen": "127.0.0.1:1", **extra}
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return str(path)


def web(tmp_path: Path, doc: object) -> str:
    path = tmp_path / "web.yml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(
    ("doc", "problem"),
    [
        ({"tls_server_config": {"cert_file": "missing.crt", "key_file": "server.key"}},
         "tls_server_config.cert_file: cannot read"),
        ({"tls_server_config": {"cert_file": "server.crt", "key_file": "other.key"}},
         "key_file '{dir}/other.key' is not the key of cert_file '{dir}/server.crt'"),
        ({"tls_server_config": {"cert_file": "server.key", "key_file": "server.key"}},
         "tls_server_config.cert_file: no PEM certificate in it"),
        ({"tls_server_config": {"cert_file": "server.crt", "key_file": "server.crt"}},
         "tls_server_config.key_file: no PEM private key in it"),
        ({"basic_auth_users": {"prometheus": "plain-text-password"}},
         "basic_auth_users.prometheus: not a bcrypt hash"),
        ({"tls_server_config": {"cert_file": "server.crt", "key_file": "server.key",
                                "min_version": "TLS14"}},
         "tls_server_config.min_version: unknown TLS version 'TLS14'"),
        ({"tls_srever_config": {}}, "tls_srever_config: unknown key (did you mean"),
    ],
)  # fmt: skip
def test_a_bad_web_config_stops_start_up_naming_the_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], doc: object, problem: str
) -> None:
    make_certs(tmp_path)
    bad = web(tmp_path, doc)
    assert main(["run", "--config", config(tmp_path), "--web.config.file", bad]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"config error: web config file {bad!r}: ")
    assert problem.format(dir=tmp_path) in err
    assert "plain-text-password" not in err  # a password is never quoted back


def test_the_config_key_names_the_file_and_the_flag_overrides_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_certs(tmp_path)
    good = web(
        tmp_path,
        {
            "tls_server_config": {
                "cert_file": "server.crt",
                "key_file": "server.key",
                "curve_preferences": ["X25519"],
            }
        },
    )
    missing = str(tmp_path / "nowhere.yml")
    assert main(["check-config", "--config", config(tmp_path, web_config_file=missing)]) == 1
    assert f"config error: web config file {missing!r}: No such file" in capsys.readouterr().err
    path = config(tmp_path, web_config_file=missing)
    assert main(["check-config", "--config", path, "--web.config.file", good]) == 0
    out, err = capsys.readouterr()
    assert yaml.safe_load(out)["web_config_file"] == good
    assert "warning: tls_server_config.curve_preferences: OpenSSL's default curves" in err


def test_check_config_refuses_a_bcrypt_cost_above_14(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hashed = "$2y$15$" + "N" * 53  # the cost is read from the hash: nothing is hashed here
    slow = web(tmp_path, {"basic_auth_users": {"prometheus": hashed}})
    assert main(["check-config", "--config", config(tmp_path), "--web.config.file", slow]) == 1
    err = capsys.readouterr().err
    assert "config error: web config file" in err
    assert "basic_auth_users.prometheus: bcrypt cost 15 is above 14" in err
    assert "N" * 53 not in err
