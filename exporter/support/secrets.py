"""What a secret is, by structure: secret names, and the secret parts of a URL.

One notion for every output: the log redactor, the metric labels, the admin API's replies and
the landing page all ask ``is_secret_key`` whether a field holds a secret; URLs are masked by
``exporter.support.urls`` (the userinfo password, and every query value whose name is not in
the short ``QUERY_ALLOWED`` list: ``latency=2000`` stays; ``streamid``, ``passphrase``,
``token``, ``sig`` and any unknown name are masked).
"""

from __future__ import annotations

import re

MASK = "********"

# Field names that hold a secret, compared lower-case with "-" and "." read as "_".
SECRET_NAMES = frozenset(
    {
        "token",
        "password",
        "passwd",
        "passphrase",
        "secret",
        "authorization",
        "auth",
        "key",
        "sig",
        "signature",
        "cdn_auth_token",
        "target_key",
        "stream_key",
        "streamid",
        "utoken",
        "apikey",
    }
)
# Names ending like these are secrets too (``admin_token``, ``new_password``, ``client_key``).
SECRET_SUFFIXES = (
    "token",
    "password",
    "passwd",
    "passphrase",
    "secret",
    "signature",
    "_key",
    "_sig",
    "_auth",
)
# A URL query parameter whose name contains one of these is always masked (even if allowed).
SECRET_WORDS = ("key", "token", "secret", "pass", "auth", "sig")
# The only query parameters shown in clear: SRT and RTMP transport options, never credentials.
QUERY_ALLOWED = frozenset(
    {"latency", "rcvlatency", "peerlatency", "mode", "transtype", "maxbw", "conntimeo", "vhost"}
)

FINGERPRINT_HEX = 12  # hex digits of a keyed fingerprint (``target_key`` label, masks)
# A mask as the exporter writes it: alone, or with the fingerprint of the value it hides.
MASK_TOKEN = rf"{re.escape(MASK)}(?:#[0-9a-f]{{{FINGERPRINT_HEX}}})?"
_MASK_TOKEN = re.compile(MASK_TOKEN)
_SEPARATORS = re.compile(r"[-.\s]")


def _normal(name: str) -> str:
    return _SEPARATORS.sub("_", name.strip().lower())


def is_secret_key(name: str) -> bool:
    """Whether a value stored under this field name is a secret. A URL used as a dictionary
    key (a restream history's targets) is no field name: its secrets are masked as a URL."""
    if "://" in name:
        return False
    k = _normal(name)
    return k in SECRET_NAMES or k.endswith(SECRET_SUFFIXES)


def is_secret_query_name(name: str) -> bool:
    """Whether a URL query parameter's value is masked: all but ``QUERY_ALLOWED``."""
    k = name.strip().lower()
    return k not in QUERY_ALLOWED or any(word in k for word in SECRET_WORDS)


def is_mask(value: str) -> bool:
    """Whether ``value`` is one of the exporter's masks (nothing of a secret in it)."""
    return _MASK_TOKEN.fullmatch(value) is not None


def secret_name_pattern() -> str:
    """A regular expression of a secret field name in free text (``new_password=...``)."""
    exact = "|".join(sorted((re.escape(n) for n in SECRET_NAMES), key=len, reverse=True))
    suffixes = "|".join(re.escape(s).replace("_", "[_.-]") for s in SECRET_SUFFIXES)
    return rf"(?:[A-Za-z0-9_.-]*?(?:{suffixes})|{exact.replace('_', '[_.-]')})"


def plain_mask(_: str) -> str:
    return MASK
