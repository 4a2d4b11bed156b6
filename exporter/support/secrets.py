"""What a secret is, by structure: secret names, and the secret parts of a URL.

One notion for every output: the log redactor, the metric labels, the admin API's replies and
the landing page all ask ``is_secret_key`` whether a field holds a secret, and mask URLs with
``mask_urls``: the userinfo password, and every query value whose name is not in the short
``QUERY_ALLOWED`` list (``latency=2000`` stays; ``streamid``, ``passphrase``, ``token``, ``sig``
and any unknown name are masked).
"""

from __future__ import annotations

import re
from collections.abc import Callable

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

# A URL inside text: a scheme, "://", then up to white space, a quote or an angle bracket.
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>]+")
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


def secret_name_pattern() -> str:
    """A regular expression of a secret field name in free text (``new_password=...``)."""
    exact = "|".join(sorted((re.escape(n) for n in SECRET_NAMES), key=len, reverse=True))
    suffixes = "|".join(re.escape(s).replace("_", "[_.-]") for s in SECRET_SUFFIXES)
    return rf"(?:[A-Za-z0-9_.-]*?(?:{suffixes})|{exact.replace('_', '[_.-]')})"


def _query(url: str) -> tuple[str, str]:
    """(everything before the query, the query). A ``#`` does not end the query: SRT stream
    ids are written as ``streamid=#!::r=live,m=publish`` unencoded."""
    head, sep, query = url.partition("?")
    return head, query if sep else ""


def query_secrets(url: str) -> list[str]:
    """The query values of a URL that the log redactor learns: those under a name that looks
    secret (``streamid``, ``passphrase``, ``token``, ``sig``, ...). Other values are masked in
    a URL too, but not hunted for in other text (an ``ip`` or ``expires`` is no secret)."""
    out = []
    for pair in _query(url)[1].split("&"):
        name, sep, value = pair.partition("=")
        named = is_secret_key(name) or any(word in name.lower() for word in SECRET_WORDS)
        if sep and value and named and not value.startswith(MASK):
            out.append(value)
    return out


def mask_query(url: str, hide: Callable[[str], str]) -> str:
    """``url`` with each masked query value replaced by ``hide(value)``; a value that is
    already a mask stays as it is, so masking twice changes nothing."""
    head, query = _query(url)
    if not query:
        return url
    pairs = []
    for pair in query.split("&"):
        name, sep, value = pair.partition("=")
        if sep and value and is_secret_query_name(name) and not value.startswith(MASK):
            pair = f"{name}={hide(value)}"
        pairs.append(pair)
    return f"{head}?{'&'.join(pairs)}"


def mask_urls(text: str, hide: Callable[[str], str]) -> str:
    """Every URL inside ``text`` with its masked query values hidden (see ``mask_query``)."""
    if "://" not in text:
        return text
    return _URL.sub(lambda m: mask_query(m.group(0), hide), text)


def urls_in(text: str) -> list[str]:
    """The URLs inside ``text``."""
    return _URL.findall(text) if "://" in text else []


def plain_mask(_: str) -> str:
    return MASK
