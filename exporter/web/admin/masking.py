"""Masks secret fields in upstream replies and puts stored secrets back where a write sends a mask.

Masked by field, never by substring of other text: values of secret-named keys (``password``,
``target_key``, ``token``, ...; empty strings stay empty so "no password" stays visible), the
password part of URL userinfo, and the exporter's own credentials. Each mask carries the keyed
fingerprint of the value it hides (``********#<12 hex>``, the fingerprint of the metrics'
``target_key`` label), so a write that sends it back gets exactly that value, whichever entry
it now sits in; a mask that matches no stored value, or more than one, is refused.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Iterable
from typing import Any

from exporter.restream.identity import FINGERPRINT_HEX
from exporter.support.logs import MASK, SECRET_KEYS
from exporter.web.admin.validation import FieldError

_SCHEME = r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^/@\s?#:]*):"
# Up to the last "@" of the authority: a password may itself contain "@".
_URL_PASSWORD = re.compile(_SCHEME + r"(?P<pw>[^/\s?#]+)@")
_MASK_REF = rf"{re.escape(MASK)}#(?P<fp>[0-9a-f]{{{FINGERPRINT_HEX}}})"
_MASKED_URL_PASSWORD = re.compile(_SCHEME + _MASK_REF + "@")
_MASK_VALUE = re.compile(_MASK_REF)


class SecretMask:
    """How replies are masked: the keyed fingerprint, and credentials hidden wherever they are.

    ``credentials`` are the exporter's own (platform token and password, admin tokens): they
    never belong in platform data, so they are masked even inside other text.
    """

    def __init__(self, fingerprint: Callable[[str], str], credentials: Iterable[str] = ()):
        self.fingerprint = fingerprint
        self.credentials = tuple(c for c in credentials if len(c) >= 8)

    def of(self, secret: str) -> str:
        """The mask of one secret value: ``********#<fingerprint>``."""
        return f"{MASK}#{self.fingerprint(secret)}"

    def url(self, text: str) -> str:
        """``scheme://user:secret@host`` -> ``scheme://user:********#<fp>@host``."""
        return _URL_PASSWORD.sub(lambda m: f"{m.group('head')}:{self.of(m.group('pw'))}@", text)

    def text(self, text: str) -> str:
        for credential in self.credentials:
            if credential in text:
                text = text.replace(credential, MASK)
        return self.url(text)


def mask(data: Any, masks: SecretMask, key: str = "") -> Any:
    """A copy of a JSON value with every secret field masked."""
    secret = key.lower() in SECRET_KEYS
    if isinstance(data, str):
        if secret and data:
            return masks.of(data)
        return masks.text(data)
    if isinstance(data, dict):
        return {k: mask(v, masks, str(k)) for k, v in data.items()}
    if isinstance(data, list):
        return [mask(v, masks) for v in data]
    if secret and data not in (None, ""):
        return MASK
    return data


def secrets_in(data: Any, key: str = "") -> list[str]:
    """Values of secret fields and URL passwords inside a JSON value (for the log redactor)."""
    if isinstance(data, str):
        if key.lower() in SECRET_KEYS:
            return [data] if data and not data.startswith(MASK) else []
        return [m.group("pw") for m in _URL_PASSWORD.finditer(data) if MASK not in m.group("pw")]
    if isinstance(data, dict):
        return [s for k, v in data.items() for s in secrets_in(v, str(k))]
    if isinstance(data, list):
        return [s for v in data for s in secrets_in(v)]
    return []


def mask_history(data: Any, masks: SecretMask) -> Any:
    """Restream history: also hide the target URLs' passwords and the target keys used as
    dictionary keys."""
    data = mask(data, masks)
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        return data
    for item in data["data"]:
        history = item.get("history") if isinstance(item, dict) else None
        if not isinstance(history, dict):
            continue
        item["history"] = {
            masks.text(str(url)): (
                {masks.of(str(k)): v for k, v in keys.items()} if isinstance(keys, dict) else keys
            )
            for url, keys in history.items()
        }
    return data


# --- putting stored secrets back on writes ------------------------------------------------------
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
    """Replace each ``********#<fp>`` in ``body`` with the one stored secret of that fingerprint.

    ``stored`` is the current state (any JSON value); its secret fields and URL passwords are
    the candidates. A mask that matches no candidate or several different ones, and a mask
    anywhere but a whole secret field or a URL password, is an error: it must never be sent.
    """
    pool: dict[str, set[str]] = {}
    for secret in secrets_in(stored):
        pool.setdefault(masks.fingerprint(secret), set()).add(secret)
    errors: list[FieldError] = []

    def lookup(fp: str, path: str) -> str | None:
        found = pool.get(fp, set())
        if len(found) == 1:
            return next(iter(found))
        if found:
            errors.append(
                FieldError(
                    path,
                    f"the mask {MASK}#{fp} matches more than one "
                    f"secret of {where}; send the real value",
                )
            )
        else:
            errors.append(
                FieldError(
                    path, f"the mask {MASK}#{fp} matches no secret of {where}; send the real value"
                )
            )
        return None

    def walk(value: Any, path: str, key: str) -> Any:
        if isinstance(value, dict):
            for k in value:
                if MASK in str(k):
                    errors.append(FieldError(_join(path, str(k)), _MISPLACED))
            return {k: walk(v, _join(path, str(k)), str(k)) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v, f"{path}[{i}]", "") for i, v in enumerate(value)]
        if not isinstance(value, str) or MASK not in value:
            return value
        if key.lower() in SECRET_KEYS and (whole := _MASK_VALUE.fullmatch(value)):
            return lookup(whole.group("fp"), path) or value

        def url_password(m: re.Match[str]) -> str:
            secret = lookup(m.group("fp"), path)
            return f"{m.group('head')}:{secret}@" if secret is not None else m.group(0)

        restored = _MASKED_URL_PASSWORD.sub(url_password, value)
        if MASK in _MASKED_URL_PASSWORD.sub("", value):
            errors.append(FieldError(path, _MISPLACED))
        return restored

    return walk(copy.deepcopy(body), "", ""), errors


def _join(prefix: str, key: str) -> str:
    return f"{prefix}.{key}" if prefix else key


_MISPLACED = (
    f"the mask {MASK} stands for a stored secret only as the whole value of a secret field "
    f"({MASK}#<fingerprint>, as read) or as a URL password; send the real value here"
)
