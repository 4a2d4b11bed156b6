"""Puts stored secrets back where a write sends a mask, only into the slot it was read from.

A secret's slot is where it sits in the stored object: the same entry (a list item is known by
its URLs, credentials and query left out: a restream entry by its source and target URL), the
same field (``target_key``, ``backup.password``, the password or one query value of
``target_url``) and the same site: scheme, host, port and path of the URL the field belongs
to (for ``backup.password``, of ``backup.target_url``), read as RFC 3986 reads them
(``exporter.support.urls``). A mask sent back in its own slot gets the stored value; in any
other slot (another entry's key, the URL password of another host or application) it is
refused with 422 naming the field, and nothing is sent upstream. So is a body carrying a mask
and a URL with a fragment or one urllib cannot parse: where it sends is not certain.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from exporter.support.secrets import MASK, is_secret_key, is_secret_query_name
from exporter.support.urls import SCHEME, Url, parse_url, url_spans
from exporter.web.admin.validation import FieldError
from exporter.web.masking import MASK_REF, SecretMask

# A slot: (the enclosing entries' identities, the field path without indices, the sites).
Slot = tuple[tuple[str, ...], str, str]

_MASK_VALUE = re.compile(MASK_REF)


def _url(value: str) -> Url | None:
    """A field value that is one URL, parsed; None for anything else."""
    return parse_url(value.strip()) if SCHEME.match(value.strip()) else None


def _site(value: str) -> str:
    """``scheme://host:port/path`` of a URL field: what names a destination whatever its
    credentials and query; "" for a value that is no URL."""
    url = _url(value)
    return url.site if url is not None else ""


def _urls(obj: dict[Any, Any]) -> list[tuple[str, str]]:
    return sorted((str(k), v) for k, v in obj.items() if isinstance(v, str) and _site(v))


def _identity(obj: dict[Any, Any]) -> str:
    """How a list item is known: its URL fields' sites (credentials and query left out)."""
    return " ".join(f"{k}={_site(v)}" for k, v in _urls(obj))


def _sites(obj: dict[Any, Any], inherited: str) -> str:
    """Where a secret field of this object goes: its own URLs' sites (scheme, host, port and
    path), else those of the object around it."""
    return " ".join(sorted({_site(v) for _, v in _urls(obj)})) or inherited


def _join(prefix: str, key: str) -> str:
    return f"{prefix}.{key}" if prefix else key


class _Walk:
    """Walks a JSON value and reports each secret (or mask) with its slot and path."""

    def __init__(self) -> None:
        self.found: list[tuple[Slot, str, str, str]] = []  # (slot, path, kind, value)
        self.unparsed: list[str] = []  # paths of URLs with a fragment or that do not parse

    def run(self, value: Any) -> None:
        self._walk(value, "", "", (), "", False)

    def _walk(
        self, value: Any, path: str, field: str, owners: tuple[str, ...], hosts: str, secret: bool
    ) -> None:
        if isinstance(value, dict):
            inner = _sites(value, hosts)
            for k, v in value.items():
                key = str(k)
                self._walk(
                    v,
                    _join(path, key),
                    _join(field, key),
                    owners,
                    inner,
                    secret or is_secret_key(key),
                )
        elif isinstance(value, list):
            for i, item in enumerate(value):
                mine = owners
                if isinstance(item, dict):
                    mine = (*owners, f"{field}[]{_identity(item)}")
                self._walk(item, f"{path}[{i}]", f"{field}[]", mine, hosts, secret)
        elif isinstance(value, str) and value:
            if secret:
                self.found.append(((owners, field, hosts), path, "field", value))
                return
            for a, b in url_spans(value):
                url = parse_url(value[a:b])
                if url is None:
                    self.unparsed.append(path)
                    continue
                if url.fragment is not None or not url.port_ok:
                    self.unparsed.append(path)
                site = url.site
                if url.password:
                    slot = (owners, f"{field}#password", site)
                    self.found.append((slot, path, "url", url.password))
                for name, sep, v in url.pairs():
                    if sep and v and is_secret_query_name(name):
                        slot = (owners, f"{field}?{name}", site)
                        self.found.append((slot, path, "query", v))


def has_mask(body: Any) -> bool:
    """Whether the mask appears anywhere in a JSON value (keys included)."""
    if isinstance(body, str):
        return MASK in body
    if isinstance(body, dict):
        return any(MASK in str(k) or has_mask(v) for k, v in body.items())
    if isinstance(body, list):
        return any(has_mask(v) for v in body)
    return False


def restore_secrets(
    body: Any, stored: Any, masks: SecretMask, where: str = "the stored resource"
) -> tuple[Any, list[FieldError]]:
    """Replace each ``********#<fp>`` in ``body`` with the stored secret of that fingerprint in
    the same slot (see the module's docstring).

    A mask that matches no stored secret, one of another slot, several different ones, or that
    stands anywhere but a whole secret field, a URL password or a query value, is an error: it
    must never be sent.
    """
    if isinstance(stored, dict) and isinstance(stored.get("data"), dict):
        stored = stored["data"]  # a read's envelope: the object is its data
    stored_walk = _Walk()
    stored_walk.run(stored)
    pool: dict[tuple[Slot, str], set[str]] = {}
    anywhere: set[str] = set()
    for slot, _, _, secret in stored_walk.found:
        if not secret.startswith(MASK):
            fp = masks.fingerprint(secret)
            pool.setdefault((slot, fp), set()).add(secret)
            anywhere.add(fp)
    errors: list[FieldError] = []

    def lookup(slot: Slot, fp: str, path: str) -> str | None:
        found = pool.get((slot, fp), set())
        if len(found) == 1:
            return next(iter(found))
        if found:
            why = f"matches more than one secret of {where}"
        elif fp in anywhere:
            why = (
                f"stands for a secret of another entry, field or host of {where}; a mask is "
                "put back only where it was read"
            )
        else:
            why = f"matches no secret of {where}"
        errors.append(FieldError(path, f"the mask {MASK}#{fp} {why}; send the real value"))
        return None

    body_walk = _Walk()
    body_walk.run(body)
    errors += [FieldError(path, UNPARSED) for path in dict.fromkeys(body_walk.unparsed)]
    replacements: dict[str, list[tuple[str, str]]] = {}  # path -> (mask text, secret)
    for slot, path, _, value in body_walk.found:
        if MASK not in value:
            continue
        whole = _MASK_VALUE.fullmatch(value)
        if whole is None:
            continue  # a misplaced mask: reported below
        found = lookup(slot, whole.group("fp"), path)
        if found is not None:
            replacements.setdefault(path, []).append((value, found))
    reported = {e.field for e in errors}
    return _apply(copy.deepcopy(body), "", replacements, errors, reported), errors


def _apply(
    value: Any,
    path: str,
    replacements: dict[str, list[tuple[str, str]]],
    errors: list[FieldError],
    reported: set[str],
) -> Any:
    """Put the looked-up secrets in; any mask left over is misplaced."""
    if isinstance(value, dict):
        for k in value:
            if MASK in str(k):
                reported.add(_join(path, str(k)))
                errors.append(FieldError(_join(path, str(k)), MISPLACED))
        return {
            k: _apply(v, _join(path, str(k)), replacements, errors, reported)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [
            _apply(v, f"{path}[{i}]", replacements, errors, reported) for i, v in enumerate(value)
        ]
    if not isinstance(value, str) or MASK not in value:
        return value
    mine = replacements.get(path, [])
    if len(mine) == 1 and mine[0][0] == value:
        return mine[0][1]  # a whole secret field
    text = value
    for masked, secret in mine:
        text = text.replace(masked, secret, 1)
    if MASK in text and path not in reported:  # a set: one check per field, never a scan
        reported.add(path)
        errors.append(FieldError(path, MISPLACED))
    return text


MISPLACED = (
    f"the mask {MASK} stands for a stored secret only as the whole value of a secret field, a "
    f"URL password or a URL query value ({MASK}#<fingerprint>, as read); send the real value here"
)

UNPARSED = (
    "a URL with a fragment (#...) or one that does not parse as RFC 3986 says (a port that is "
    f"no number, a bracket left open) can not travel with a mask ({MASK}) in the same body: "
    "where it sends is not certain; percent-encode the # as %23, or send every secret in clear"
)
