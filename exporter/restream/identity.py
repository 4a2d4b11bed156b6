"""How a restream target is named in labels: URLs without credentials, keys as fingerprints.

A target URL may carry its secret in the query (``srt://host:9000?streamid=...&passphrase=...``,
``rtmp://host/app?token=...``): those values are shown as ``********#<fingerprint>`` (the same
keyed fingerprint as ``target_key``), so two targets that differ only in them stay two series.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterable
from datetime import UTC, datetime

from exporter.config.settings import UpstreamSettings
from exporter.restream.reply import (
    HistoryPoint,
    RestreamResource,
    ScheduleWindow,
    StatusRecord,
)
from exporter.support.secrets import FINGERPRINT_HEX, MASK
from exporter.support.urls import mask_urls
from exporter.support.urls import url_secrets as url_secrets

# Domain separation for the HMAC key; public, so without a secret the fingerprint is only as
# strong as the stream key itself (a short key can be found by trying candidates).
_PEPPER = b"cdnvideo-exporter/restream/target_key/v1"
_CACHE_LIMIT = 4096

# Label values of one target: (resource_id, source, target, target_key); account is added last.
TargetId = tuple[str, str, str, str]


class KeyFingerprint:
    """``target_key`` -> the first 12 hex digits of HMAC-SHA256; an empty key stays ``""``.

    ``secret`` keys the HMAC, so a fingerprint cannot be checked against guessed keys without
    it. With an empty secret the HMAC key is a public constant (a plain salted hash).
    """

    def __init__(self, secret: bytes = b"") -> None:
        self._key = hashlib.sha256(_PEPPER + b"\x00" + secret).digest()
        self.keyed = bool(secret)
        self._cache: dict[str, str] = {}

    def __call__(self, key: str) -> str:
        if not key:
            return ""
        found = self._cache.get(key)
        if found is None:
            found = hmac.new(self._key, key.encode(), hashlib.sha256).hexdigest()[:FINGERPRINT_HEX]
            if len(self._cache) >= _CACHE_LIMIT:
                self._cache.clear()
            self._cache[key] = found
        return found


def fingerprint_secret(upstream: UpstreamSettings) -> bytes:
    """What keys the fingerprint: the platform token, else the platform password.

    The metrics and the admin API's masks use the same key, so a mask's fingerprint is the
    ``target_key`` label of the same target.
    """
    return (upstream.token or upstream.password).encode()


def url_label(text: str, fingerprint: KeyFingerprint, key: str = "") -> str:
    """Text fit for a label (a target or source URL, a name, a description): in every URL
    inside it ``user:password@`` removed and secret query values as
    ``********#<fingerprint>`` (``exporter.support.urls.mask_urls``), and the stream key
    masked if the text happens to carry it (some targets put the key in the path)."""
    clean = mask_urls(text, lambda value: f"{MASK}#{fingerprint(value)}", strip_userinfo=True)
    if len(key) >= 3 and key in clean:
        clean = clean.replace(key, MASK)
    return clean


def target_id(
    resource_id: str, source: str, url: str, key: str, fingerprint: KeyFingerprint
) -> TargetId:
    return (
        resource_id,
        url_label(source, fingerprint, key),
        url_label(url, fingerprint, key),
        fingerprint(key),
    )


def resource_secrets(resources: Iterable[RestreamResource]) -> list[str]:
    """Passwords, stream keys and URL credentials found in resource configurations."""
    out: list[str] = []
    for res in resources:
        for e in res.restreams:
            out += [e.password, e.backup_password, e.target_key]
            for url in (e.source, e.target_url, e.backup_url):
                out += url_secrets(url)
    return [s for s in out if s]


def status_secrets(records: Iterable[StatusRecord]) -> list[str]:
    out: list[str] = []
    for rec in records:
        for t in rec.targets:
            out += [t.target_key, *url_secrets(t.target_url), *url_secrets(t.source)]
    return [s for s in out if s]


def history_secrets(points: Iterable[HistoryPoint]) -> list[str]:
    out: list[str] = []
    for p in points:
        out += [p.target_key, *url_secrets(p.target_url), *url_secrets(p.source)]
    return [s for s in out if s]


def parse_utc(text: str) -> float | None:
    """``YYYY-MM-DDThh:mm:ssZ`` (any ISO 8601 form; naive means UTC) -> Unix seconds."""
    try:
        dt = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp()


def in_schedule(windows: tuple[ScheduleWindow, ...], now: float) -> bool:
    """True without a schedule, or when ``start <= now < stop`` for one window.

    A window whose bounds do not parse never matches.
    """
    if not windows:
        return True
    for w in windows:
        start, stop = parse_utc(w.start), parse_utc(w.stop)
        if start is not None and stop is not None and start <= now < stop:
            return True
    return False


def utc_text(ts: float) -> str:
    """Unix seconds -> the history endpoint's ``YYYY-mm-ddTHH:MM:SSZ``."""
    return datetime.fromtimestamp(int(ts), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
