"""Masks secrets in upstream replies and puts stored secrets back where a write sends the mask.

Masked everywhere in a reply: values of secret-named keys (``password``, ``target_key``,
``token``, ...; empty strings stay empty so "no password" stays visible), the password part of
URLs (``rtmp://user:********@host/app``), and known secret values (the redactor's). In a
restream history, ``target_key`` is a dictionary key; it becomes ``********#<fingerprint>``
so several keys of one target stay apart.
"""

from __future__ import annotations

import copy
import hashlib
import re
from typing import Any

from exporter.logs import MASK, SECRET_KEYS, Redactor, strip_userinfo
from exporter.web.admin.validation import FieldError

_URL_PASSWORD = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^/@\s?#:]*):[^/@\s?#]*@")
_URL_PASSWORD_VALUE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/@\s?#:]*:(?P<pw>[^/@\s?#]+)@")
SECRET_FIELDS = ("password", "target_key")


def mask_url(url: str) -> str:
    """``scheme://user:secret@host`` -> ``scheme://user:********@host``."""
    return _URL_PASSWORD.sub(lambda m: f"{m.group('head')}:{MASK}@", url)


def fingerprint(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()[:8]


def _mask_text(text: str, redactor: Redactor | None) -> str:
    masked = mask_url(text)
    if redactor is not None and redactor.text(masked) != strip_userinfo(masked):
        # A known secret value (an upstream token, say) appears in the text.
        return redactor.text(masked)
    return masked


def mask(data: Any, redactor: Redactor | None = None, key: str = "") -> Any:
    """A copy of a JSON value with every secret masked."""
    if key.lower() in SECRET_KEYS and isinstance(data, str) and data:
        return MASK
    if isinstance(data, str):
        return _mask_text(data, redactor)
    if isinstance(data, dict):
        return {k: mask(v, redactor, str(k)) for k, v in data.items()}
    if isinstance(data, list):
        return [mask(v, redactor) for v in data]
    if key.lower() in SECRET_KEYS and data not in (None, ""):
        return MASK
    return data


def secrets_in(data: Any, key: str = "") -> list[str]:
    """Secret values inside a JSON value (to teach the log redactor before anything is logged)."""
    if isinstance(data, str):
        if key.lower() in SECRET_KEYS:
            return [data]
        return [m.group("pw") for m in _URL_PASSWORD_VALUE.finditer(data)]
    if isinstance(data, dict):
        return [s for k, v in data.items() for s in secrets_in(v, str(k))]
    if isinstance(data, list):
        return [s for v in data for s in secrets_in(v)]
    return []


def mask_history(data: Any, redactor: Redactor | None = None) -> Any:
    """Restream history: also hide the target keys used as dictionary keys."""
    data = mask(data, redactor)
    if not isinstance(data, dict) or not isinstance(data.get("data"), list):
        return data
    for item in data["data"]:
        history = item.get("history") if isinstance(item, dict) else None
        if not isinstance(history, dict):
            continue
        for url, keys in list(history.items()):
            if isinstance(keys, dict):
                history[url] = {f"{MASK}#{fingerprint(str(k))}": v for k, v in keys.items()}
    return data


# --- keeping stored secrets on writes -------------------------------------------------------
def _is_masked_url(value: Any) -> bool:
    return isinstance(value, str) and f":{MASK}@" in value


def has_mask(body: Any) -> bool:
    """Whether a restream body carries the mask anywhere a secret goes."""
    if not isinstance(body, dict) or not isinstance(body.get("restreams"), list):
        return False
    for entry in body["restreams"]:
        if not isinstance(entry, dict):
            continue
        for holder in (entry, _backup(entry)):
            if any(holder.get(k) == MASK for k in SECRET_FIELDS):
                return True
            if _is_masked_url(holder.get("target_url")):
                return True
    return False


def _backup(entry: dict[str, Any]) -> dict[str, Any]:
    backup = entry.get("backup")
    return backup if isinstance(backup, dict) else {}


def _identity(entry: dict[str, Any]) -> tuple[str, str]:
    return str(entry.get("source", "")), mask_url(str(entry.get("target_url", "")))


def stored_entries(reply_data: Any) -> list[dict[str, Any]]:
    """The restream entries of a GET-resource reply (``{data: {restreams: [...]}}``)."""
    if not isinstance(reply_data, dict):
        return []
    data = reply_data.get("data")
    if not isinstance(data, dict):
        return []
    restreams = data.get("restreams")
    return [e for e in restreams if isinstance(e, dict)] if isinstance(restreams, list) else []


def restore_secrets(
    body: dict[str, Any], stored: list[dict[str, Any]]
) -> tuple[dict[str, Any], list[FieldError]]:
    """Replace masks in ``body`` with the stored values of the entry that has the same source
    and target URL; a mask with no stored counterpart is an error (it must never go upstream)."""
    out = copy.deepcopy(body)
    errors: list[FieldError] = []
    by_id = {_identity(e): e for e in stored}
    for i, entry in enumerate(out.get("restreams") or []):
        if not isinstance(entry, dict):
            continue
        where = f"restreams[{i}]"
        match = by_id.get(_identity(entry))
        _restore(entry, match, where, errors)
        backup = entry.get("backup")
        if isinstance(backup, dict):
            stored_backup = _backup(match) if match is not None else None
            if stored_backup is not None and mask_url(str(backup.get("target_url", ""))) != (
                mask_url(str(stored_backup.get("target_url", "")))
            ):
                stored_backup = None
            _restore(backup, stored_backup, f"{where}.backup", errors)
    return out, errors


def _restore(
    holder: dict[str, Any], stored: dict[str, Any] | None, where: str, errors: list[FieldError]
) -> None:
    for key in SECRET_FIELDS:
        if holder.get(key) == MASK:
            if stored is not None and isinstance(stored.get(key), str):
                holder[key] = stored[key]
            else:
                errors.append(FieldError(f"{where}.{key}", _no_stored(where)))
    url = holder.get("target_url")
    if _is_masked_url(url):
        stored_url = stored.get("target_url") if stored is not None else None
        if isinstance(stored_url, str) and mask_url(stored_url) == url:
            holder["target_url"] = stored_url
        else:
            errors.append(FieldError(f"{where}.target_url", _no_stored(where)))


def _no_stored(where: str) -> str:
    return (
        f"the mask {MASK} keeps a stored secret, but no stored entry matches this "
        f"{where.split('.')[0]}'s source and target_url; send the real value"
    )


def mask_errors_on_create(body: Any) -> list[FieldError]:
    """On create there is nothing stored: a mask would become the literal password."""
    if not has_mask(body):
        return []
    errors: list[FieldError] = []
    for i, entry in enumerate(body.get("restreams") or []):
        if not isinstance(entry, dict):
            continue
        backup = _backup(entry)
        for prefix, holder in ((f"restreams[{i}]", entry), (f"restreams[{i}].backup", backup)):
            for key in SECRET_FIELDS:
                if holder.get(key) == MASK:
                    errors.append(FieldError(f"{prefix}.{key}", _CREATE_MSG))
            if _is_masked_url(holder.get("target_url")):
                errors.append(FieldError(f"{prefix}.target_url", _CREATE_MSG))
    return errors


_CREATE_MSG = f"the mask {MASK} cannot be stored on create; send the real value"
