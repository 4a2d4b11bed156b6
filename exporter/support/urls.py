"""URLs read the one way RFC 3986 (``urllib.parse.urlsplit``) reads them, masks understood.

Every place that shows, masks, fingerprints or restores a URL parses it here, so they agree
with each other and with the platform about where its host is: ``rtmp://evil.example#@a.host/x``
goes to ``evil.example`` (the ``#`` ends the authority), never to the host after the ``@``.

The exporter's own masks (``********`` or ``********#<fingerprint>``) are read as one opaque
value wherever they stand, so a URL read back masked (``rtmp://u:********#<fp>@host/app``)
parses as the URL it was, not as one whose fragment starts at the mask's ``#``.

A URL inside free text starts at ``scheme://`` and runs to the next URL or the end of the
text: nothing inside a query can be trusted to end it (a quote, a space or a bracket may be
part of a value), so what follows a query is read, and masked, as part of it. For the same
reason a ``scheme://`` after a URL's ``?`` or ``#`` starts no URL of its own (it would take a
secret's first letters for its scheme): it is part of the value, and a URL inside a value
that is shown is masked in turn.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from urllib.parse import urlsplit

from exporter.support.secrets import (
    MASK_TOKEN,
    QUERY_ALLOWED,
    SECRET_WORDS,
    is_mask,
    is_secret_key,
    is_secret_query_name,
)

SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
_MASK = re.compile(MASK_TOKEN)
_HOLDER = re.compile("\ue000([0-9]+)\ue001")


@dataclass(frozen=True)
class Url:
    """One URL's parts as RFC 3986 splits them (masks put back in place).

    ``query`` and ``fragment`` are None when the URL has no ``?`` or ``#``; ``port_ok`` is
    False when the text after the host's ``:`` is no port number.
    """

    scheme: str
    userinfo: str | None
    hostport: str
    host: str
    port: int | None
    port_ok: bool
    path: str
    query: str | None
    fragment: str | None

    @property
    def password(self) -> str | None:
        """The userinfo after its first ``:``; None without one."""
        if self.userinfo is None:
            return None
        _, sep, password = self.userinfo.partition(":")
        return password if sep else None

    @property
    def site(self) -> str:
        """``scheme://host:port/path``: where the URL sends, whatever its credentials."""
        port = f":{self.port}" if self.port is not None else ""
        return f"{self.scheme}://{self.host}{port}{self.path}"

    def pairs(self) -> list[tuple[str, str, str]]:
        """The query's ``(name, "=", value)`` pieces (``sep`` "" for a bare piece).

        When a query is there, a fragment continues it: SRT stream ids are written
        ``streamid=#!::r=...`` unencoded, so the text after ``#`` is masked as the value it
        was meant to be. The pieces split on ``&``.
        """
        if self.query is None:
            return []
        text = self.query if self.fragment is None else f"{self.query}#{self.fragment}"
        return [piece.partition("=") for piece in text.split("&")]


@functools.lru_cache(maxsize=4096)
def parse_url(text: str) -> Url | None:
    """``text`` as one URL (``scheme://...``); None when it is none or urllib refuses it.
    Pure, so remembered: a write body's walk and a reply's masking read each URL once."""
    holders: list[str] = []

    def hold(m: re.Match[str]) -> str:
        holders.append(m.group(0))
        return f"\ue000{len(holders) - 1}\ue001"

    held = _MASK.sub(hold, text) if "*" in text else text
    if not SCHEME.match(held):
        return None
    try:
        parts = urlsplit(held)
    except ValueError:  # a bracket that does not close, a host NFKC changes into another
        return None

    def put_back(m: re.Match[str]) -> str:
        i = int(m.group(1))
        return holders[i] if i < len(holders) else m.group(0)  # text that looked like one

    def back(part: str) -> str:
        return _HOLDER.sub(put_back, part) if holders else part

    userinfo, at, hostport = parts.netloc.rpartition("@")
    try:
        port, port_ok = parts.port, True
    except ValueError:
        port, port_ok = None, False
    return Url(
        scheme=parts.scheme,
        userinfo=back(userinfo) if at else None,
        hostport=back(hostport),
        host=back(parts.hostname or ""),
        port=port,
        port_ok=port_ok,
        path=back(parts.path),
        query=back(parts.query) if "?" in held.partition("#")[0] else None,
        fragment=back(parts.fragment) if "#" in held else None,
    )


def url_spans(text: str) -> Iterator[tuple[int, int]]:
    """Where each URL inside ``text`` is: from its ``scheme://`` to the next one that is not
    inside the query or fragment of the one before, or to the end."""
    starts: list[int] = []
    for m in SCHEME.finditer(text) if "://" in text else ():
        if not starts or not _past_query(text[starts[-1] : m.start()]):
            starts.append(m.start())
    for i, start in enumerate(starts):
        yield start, starts[i + 1] if i + 1 < len(starts) else len(text)


def _past_query(url: str) -> bool:
    """Whether the text of a URL from its scheme on has reached its query or fragment (a
    mask's ``#`` is no fragment)."""
    rest = url.partition("://")[2]
    if "*" in rest:
        rest = _MASK.sub("", rest)
    return "?" in rest or "#" in rest


def urls_in(text: str) -> list[str]:
    """The URLs inside ``text``, as ``url_spans`` cuts them."""
    return [text[a:b] for a, b in url_spans(text)]


Hide = Callable[[str], str]


def mask_url(text: str, hide: Hide, strip_userinfo: bool = False) -> str:
    """One URL (the whole of ``text``) with its secrets hidden by ``hide(value)``.

    Hidden: the userinfo password (the whole userinfo with ``strip_userinfo``: removed), each
    query value but ``QUERY_ALLOWED`` names (and any value holding a ``#``: a fragment that
    began inside it), a bare query piece, a fragment without a query. A URL urllib cannot
    parse is hidden whole. A value that is a mask already stays as it is.
    """
    url = parse_url(text)
    if url is None:
        return text if is_mask(text.strip()) else hide(text)
    masked = _rebuilt(url, hide, strip_userinfo)
    # Nothing hidden: the text as it was (urllib drops tabs and line breaks, and lower-cases
    # the scheme, when it reads a URL).
    return text if masked == _rebuilt(url, unchanged, False) else masked


def unchanged(value: str) -> str:
    """A ``hide`` that hides nothing (``mask_urls(text, unchanged, strip_userinfo=True)``
    only removes userinfo)."""
    return value


def _rebuilt(url: Url, hide: Hide, strip_userinfo: bool) -> str:
    out = [url.scheme, "://"]
    if url.userinfo is not None and not strip_userinfo:
        user, sep, password = url.userinfo.partition(":")
        out += [user, sep, _hidden(password, hide), "@"]
    out += [url.hostport, url.path]
    if url.query is not None:
        pieces = (
            _piece(name, sep, value, hide, strip_userinfo) for name, sep, value in url.pairs()
        )
        out += ["?", "&".join(pieces)]
    elif url.fragment is not None:
        out += ["#", _hidden(url.fragment, hide)]
    return "".join(out)


def _hidden(value: str, hide: Hide) -> str:
    return value if not value or is_mask(value) else hide(value)


def _piece(name: str, sep: str, value: str, hide: Hide, strip_userinfo: bool) -> str:
    if not sep:  # a bare piece (``?SECRETKEY``): shown only when it is an allowed name
        return name if name.strip().lower() in QUERY_ALLOWED else _hidden(name, hide)
    if is_secret_query_name(name) or "#" in value:
        return f"{name}={_hidden(value, hide)}"
    return f"{name}={mask_urls(value, hide, strip_userinfo)}"


def mask_urls(text: str, hide: Hide, strip_userinfo: bool = False) -> str:
    """``text`` with every URL inside it masked as ``mask_url`` masks one."""
    spans = list(url_spans(text))
    if not spans:
        return text
    out = [text[: spans[0][0]]]
    for a, b in spans:
        out.append(mask_url(text[a:b], hide, strip_userinfo))
    return "".join(out)


def url_secrets(text: str) -> list[str]:
    """What of one URL the log redactor learns: the userinfo and its password, query values
    under a name that looks secret, and a fragment without a query (masks excluded). A bare
    user name (``rtmp://live@host``) is no secret: every ``live`` would be masked."""
    url = parse_url(text)
    if url is None:
        return []
    out: list[str] = []
    password = url.password
    if password and url.userinfo is not None:
        out += [url.userinfo, password]
    for name, sep, value in url.pairs():
        if sep and value and (_looks_secret(name) or "#" in value):
            out.append(value)
        elif sep and "://" in value:  # a URL inside a value shown: its own secrets
            out += [s for inner in urls_in(value) for s in url_secrets(inner)]
    if url.query is None and url.fragment:
        out.append(url.fragment)
    return [s for s in out if not is_mask(s)]


def _looks_secret(name: str) -> bool:
    return is_secret_key(name) or any(word in name.lower() for word in SECRET_WORDS)
