"""Masks secret fields in upstream replies (putting them back on writes: ``restore``).

Masked by structure, never by substring of other text, with the one notion of a secret the log
redactor uses (``exporter.support.secrets``):
- the value of every field whose name is secret (``password``, ``target_key``, ``new_password``,
  ``client_key``, ...), whatever its type: a list or an object under such a name is masked to
  its last leaf; empty strings stay empty so "no password" stays visible;
- in every URL, the userinfo password and every query value but the allowed names
  (``streamid``, ``passphrase``, ``token``, ...);
- the exporter's own credentials, wherever they appear.
Each mask carries the keyed fingerprint of the value it hides (``********#<12 hex>``, the
fingerprint of the metrics' ``target_key`` label).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from exporter.config.settings import Settings
from exporter.restream.identity import KeyFingerprint, fingerprint_secret
from exporter.support.secrets import FINGERPRINT_HEX, MASK, is_secret_key
from exporter.support.urls import mask_urls, url_secrets, urls_in

MASK_REF = rf"{re.escape(MASK)}#(?P<fp>[0-9a-f]{{{FINGERPRINT_HEX}}})"


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
        """Every URL in ``text`` with its password and secret query values masked:
        ``srt://user:********#<fp>@host?streamid=********#<fp>&latency=2000``."""
        return mask_urls(text, self.of)

    def text(self, text: str) -> str:
        return self.url(self.without_credentials(text))

    def without_credentials(self, text: str) -> str:
        for credential in self.credentials:
            if credential in text:
                text = text.replace(credential, MASK)
        return text


def secret_mask(settings: Settings) -> SecretMask:
    """The masks of this exporter: keyed like the metrics' ``target_key`` label."""
    return SecretMask(KeyFingerprint(fingerprint_secret(settings.upstream)), settings.secrets())


def mask(data: Any, masks: SecretMask, key: str = "", secret: bool = False) -> Any:
    """A copy of a JSON value with every secret masked; ``secret``: the value sits under a
    secret name, so every leaf of it is one."""
    secret = secret or is_secret_key(key)
    if isinstance(data, str):
        if secret and data:
            return masks.of(data)
        return masks.text(data)
    if isinstance(data, dict):
        return {k: mask(v, masks, str(k), secret) for k, v in data.items()}
    if isinstance(data, list):
        return [mask(v, masks, "", secret) for v in data]
    if secret and data not in (None, ""):
        return MASK
    return data


def url_secrets_of(text: str) -> list[str]:
    """URL passwords and secret query values inside a text (masks excluded)."""
    return [s for url in urls_in(text) for s in url_secrets(url)]


def secrets_in(data: Any, key: str = "", secret: bool = False) -> list[str]:
    """Values of secret fields and URL secrets inside a JSON value (for the log redactor)."""
    secret = secret or is_secret_key(key)
    if isinstance(data, str):
        if secret:
            return [data] if data and not data.startswith(MASK) else []
        return url_secrets_of(data)
    if isinstance(data, dict):
        return [s for k, v in data.items() for s in secrets_in(v, str(k), secret)]
    if isinstance(data, list):
        return [s for v in data for s in secrets_in(v, "", secret)]
    return []


def mask_video_link(data: Any, masks: SecretMask) -> Any:
    """The talking-head video link: the one URL whose query is the answer asked for (its
    ``sig`` is valid 6 hours, from the exporter's address only); everything else masked."""
    masked = mask(data, masks)
    if isinstance(data, dict) and isinstance(data.get("url"), str):
        masked["url"] = masks.without_credentials(data["url"])
    return masked


def mask_history(data: Any, masks: SecretMask) -> Any:
    """Restream history: also hide the target URLs' secrets and the target keys used as
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
