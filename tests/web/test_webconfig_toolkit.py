"""The exporter-toolkit's own test files: what node_exporter accepts loads, what it refuses is
refused with a message that names the key; the few things not honoured are warnings."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from exporter.config import ConfigError
from exporter.web.webconfig import load_web_config

FILES = Path(__file__).parent / "toolkit"

# file -> (TLS on, basic-auth users, warning fragment or "")
ACCEPTED = {
    "web_config_empty.yml": (False, 0, ""),
    "web_config_headers.good.yml": (False, 0, ""),
    "web_config_noAuth.good.yml": (True, 0, ""),
    "web_config_noAuth.good.blocking.yml": (True, 0, ""),
    "web_config_auth_clientCAs_missing.bad.yml": (True, 0, ""),  # fails at handshake only
    "web_config_noAuth_allCiphers.good.yml": (True, 0, ""),
    "web_config_noAuth_someCiphers.good.yml": (True, 0, ""),
    "web_config_noAuth_someCiphers_noOrder.good.yml": (True, 0, ""),
    "web_config_noAuth_noHTTP2.good.yml": (True, 0, ""),
    # refused by Go's HTTP/2 server only; this server speaks HTTP/1.1
    "web_config_noAuth_noHTTP2Cipher.bad.yml": (True, 0, ""),
    "web_config_noAuth_allCurves.good.yml": (True, 0, "curve_preferences"),
    "web_config_noAuth_someCurves.good.yml": (True, 0, "curve_preferences"),
    "web_config_noAuth_tlsInline.good.yml": (True, 0, ""),
    "tls_config_noAuth.requireandverifyclientcert.good.yml": (True, 0, ""),
    "tls_config_noAuth.requireanyclientcert.good.yml": (True, 0, "RequireAnyClientCert"),
    "tls_config_noAuth.requireanyclientcertkeyinline.good.yml": (True, 0, "RequireAnyClientCert"),
    "web_config_auth_client_san.good.yaml": (True, 0, ""),
    "web_config_auth_client_san.bad.yaml": (True, 0, ""),  # its client is refused at runtime
    "web_config_rate_limiter_nonblocking.yaml": (False, 0, ""),
    "web_config_rate_limiter_one_second.yaml": (False, 0, ""),
}

REFUSED = {
    "web_config_junk.yml": "expected a mapping",
    "web_config_junk_key.yml": (
        "tls_server_config.cert_filse: unknown key (did you mean 'cert_file'?)"
    ),
    "web_config_noAuth_certPath_empty.bad.yml": "missing one of cert or cert_file",
    "web_config_noAuth_cert_empty.bad.yml": "missing one of cert or cert_file",
    "web_config_noAuth_keyPath_empty.bad.yml": "missing one of key or key_file",
    "web_config_noAuth_key_empty.bad.yml": "missing one of key or key_file",
    "web_config_noAuth_certPath_keyPath_empty.bad.yml": "missing one of cert or cert_file",
    "web_config_noAuth_certPath_invalid.bad.yml": "cert_file: cannot read",
    "web_config_noAuth_keyPath_invalid.bad.yml": "cannot read",
    "web_config_noAuth_certPath_keyPath_invalid.bad.yml": "cert_file: cannot read",
    "web_config_noAuth.bad.yml": "client CA's have been configured without a client_auth_type",
    "web_config_auth_clientCAs_invalid.bad.yml": "client CA's have been configured without",
    "web_config_auth_user_list_invalid.bad.yml": "basic_auth_users.john: not a bcrypt hash",
    "web_config_noAuth_inventedCiphers.bad.yml": "unknown cipher",
    "web_config_noAuth_inventedCurves.bad.yml": "unknown curve 'CurveP257'",
    "web_config_noAuth_wrongTLSVersion.bad.yml": "min_version: unknown TLS version 'TLS111'",
    "web_config_headers_content_type_options.bad.yml": "X-Content-Type-Options: expected one of",
    "web_config_headers_frame_options.bad.yml": "X-Frame-Options: expected one of",
    "web_config_headers_extra_header.bad.yml": "Content-Type: this header can not be configured",
    # The toolkit takes these two; here bob's bcrypt cost 18 is above the cap (14): each of
    # his checks, and each unknown user's, would hold a core for seconds.
    "web_config_users.good.yml": "basic_auth_users.bob: bcrypt cost 18 is above 14",
    "web_config_users_noTLS.good.yml": "basic_auth_users.bob: bcrypt cost 18 is above 14",
}


def test_every_toolkit_file_has_a_verdict() -> None:
    configs = {p.name for p in FILES.iterdir() if p.suffix in (".yml", ".yaml")}
    assert configs == set(ACCEPTED) | set(REFUSED)


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_a_file_the_toolkit_accepts_loads(name: str) -> None:
    tls, users, warning = ACCEPTED[name]
    config = load_web_config(str(FILES / name))
    assert (config.tls is not None) == tls
    assert len(config.users) == users
    if warning:
        assert any(warning in w for w in config.warnings), config.warnings
    else:
        assert config.warnings == ()


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_file_the_toolkit_refuses_is_refused_by_name(name: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_web_config(str(FILES / name))
    message = str(caught.value)
    assert message.startswith(f"web config file {str(FILES / name)!r}: ")
    assert REFUSED[name] in message


def test_settings_of_the_toolkit_files_are_applied() -> None:
    pinned = load_web_config(str(FILES / "web_config_noAuth_someCiphers.good.yml")).tls
    assert pinned is not None
    assert pinned.minimum_version == pinned.maximum_version == ssl.TLSVersion.TLSv1_2
    assert {c["name"] for c in pinned.get_ciphers() if c["protocol"] == "TLSv1.2"} == {
        "ECDHE-RSA-AES128-GCM-SHA256",
        "ECDHE-RSA-AES256-GCM-SHA384",
    }
    assert pinned.options & ssl.OP_CIPHER_SERVER_PREFERENCE
    unordered = load_web_config(str(FILES / "web_config_noAuth_someCiphers_noOrder.good.yml"))
    assert unordered.tls is not None
    assert not unordered.tls.options & ssl.OP_CIPHER_SERVER_PREFERENCE
    verify = load_web_config(str(FILES / "tls_config_noAuth.requireandverifyclientcert.good.yml"))
    assert verify.tls is not None
    assert verify.tls.verify_mode == ssl.CERT_REQUIRED
    optional = load_web_config(str(FILES / "web_config_noAuth.good.yml"))
    assert optional.tls is not None
    assert optional.tls.verify_mode == ssl.CERT_OPTIONAL
    assert optional.tls.minimum_version == ssl.TLSVersion.TLSv1_2
    sans = load_web_config(str(FILES / "web_config_auth_client_san.good.yaml"))
    assert sans.allowed_sans == ("one", "test3", "two")
    headers = load_web_config(str(FILES / "web_config_headers.good.yml"))
    assert headers.headers["X-Frame-Options"] == "deny"
    assert headers.headers["X-XSS-Protection"] == "1"
    assert load_web_config(str(FILES / "web_config_rate_limiter_one_second.yaml")).rate_limit == (
        1.0,
        0,
    )
    assert (
        load_web_config(str(FILES / "web_config_rate_limiter_nonblocking.yaml")).rate_limit is None
    )


@pytest.mark.parametrize(("cost", "loads"), [("04", True), ("14", True), ("15", False)])
def test_a_bcrypt_cost_above_14_is_refused_naming_the_user(
    tmp_path: Path, cost: str, loads: bool
) -> None:
    hashed = "$2y$" + cost + "$" + "x" * 53  # the form is checked, not the hash's cost in time
    path = tmp_path / "web.yml"
    path.write_text(f"basic_auth_users:\n  prometheus: {hashed}\n", encoding="utf-8")
    if loads:
        assert load_web_config(str(path)).users == {"prometheus": hashed.encode()}
        return
    with pytest.raises(ConfigError) as caught:
        load_web_config(str(path))
    message = str(caught.value)
    assert "basic_auth_users.prometheus: bcrypt cost 15 is above 14" in message
    assert "x" * 53 not in message  # the hash is a secret
