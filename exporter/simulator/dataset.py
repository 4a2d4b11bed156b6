"""The simulated platform's starting catalogue: CDN resources, restream resources, DVR streams."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from exporter.simulator.config import SimConfig
from exporter.simulator.hashing import Stream, key_hash

RESOURCE_KINDS = ("www", "static", "vod", "img", "dl", "api", "hls", "cdn")
DAY = 86400


@dataclass(frozen=True)
class CdnResource:
    """One CDN resource of an account, as the per-resource metrics endpoint names it."""

    id: str
    name: str
    cname: str
    kind: str


@dataclass(frozen=True)
class DvrStream:
    """One network-DVR stream and the nodes that record it."""

    name: str
    hosts: tuple[str, ...]
    pattern: str  # "continuous" (24/7 with rare breaks) or "shows" (on air part of each hour)
    window: int
    enabled: bool


def cdn_resources(account_index: int, account: str, count: int) -> tuple[CdnResource, ...]:
    """Resources `<n>00001`, `<n>00002`, ... for the n-th account (1-based)."""
    out = []
    for i in range(1, count + 1):
        kind = RESOURCE_KINDS[(i - 1) % len(RESOURCE_KINDS)]
        suffix = "" if i <= len(RESOURCE_KINDS) else f"-{i:04d}"
        out.append(
            CdnResource(
                id=str(account_index * 100000 + i),
                name=f"{account}-{kind}{suffix}",
                cname=f"{kind}{suffix}.{account}.cdn.example",
                kind=kind,
            )
        )
    return tuple(out)


def _iso(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


def _entry(
    source: str,
    target_url: str,
    target_key: str,
    *,
    login: str = "",
    password: str = "",
    transcoded: bool = False,
    backup: dict[str, str] | None = None,
    schedule: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    return {
        "schedule": schedule or [],
        "source": source,
        "transcoded": transcoded,
        "transcode_quality": "360p" if transcoded else "",
        "target_type": "customRTMP",
        "target_url": target_url,
        "target_key": target_key,
        "login": login,
        "password": password,
        "backup": backup or {},
    }


def evening_schedule(start: float) -> list[dict[str, str]]:
    """Daily 18:00-20:00 UTC windows from the day before `start` to 13 days after it."""
    day0 = int(start // DAY) * DAY
    return [
        {"start": _iso(day0 + d * DAY + 18 * 3600), "stop": _iso(day0 + d * DAY + 20 * 3600)}
        for d in range(-1, 14)
    ]


def restream_seed(
    account_index: int, account: str, count: int, start: float, seed: int
) -> list[dict[str, Any]]:
    """Restream resources `<n>001`... with fixed planted secrets (all contain `SECRET`): stream
    keys, passwords, a URL password, secrets in the query of SRT and RTMP target URLs (also
    behind quotes and spaces), and a resource name holding a URL with credentials."""
    pub = f"rtmp://publish.{account}.example/live"
    base = account_index * 1000
    out: list[dict[str, Any]] = []
    for i in range(1, count + 1):
        rid = str(base + i)
        if i == 1:
            body = {
                "name": "Main stage to YouTube and Twitch",
                "active": True,
                "restreams": [
                    _entry(
                        f"{pub}/main", "rtmp://a.rtmp.youtube.com/live2", f"yt-SECRET-KEY-{rid}"
                    ),
                    _entry(
                        f"{pub}/main",
                        "rtmp://live.twitch.tv/app",
                        f"tw-SECRET-KEY-{rid}",
                        transcoded=True,
                        backup={
                            "target_url": "rtmp://backup.twitch.tv/app",
                            "login": "backup",
                            "password": f"bk-SECRET-PASS-{rid}",
                        },
                    ),
                ],
            }
        elif i == 2:
            body = {
                "name": "Partner relay",
                "active": True,
                "restreams": [
                    _entry(
                        f"{pub}/backup",
                        f"rtmp://relay:url-SECRET-PASS-{rid}@relay.partner.example:1935/live",
                        f"relay-SECRET-KEY-{rid}",
                        login="relay",
                        password=f"pw-SECRET-PASS-{rid}",
                    ),
                    # Secrets in the query: an SRT caller (stream id and passphrase) and an
                    # RTMP ingest that takes its token as a parameter.
                    _entry(
                        f"{pub}/backup",
                        f"srt://srt.partner.example:9000?streamid=#!::r=relay-SECRET-SID-{rid},"
                        f"m=publish&passphrase=srt-SECRET-PASS-{rid}&latency=2000",
                        "",
                    ),
                    _entry(
                        f"{pub}/backup",
                        f"rtmp://ingest.partner.example/app?token=tok-SECRET-TOKEN-{rid}",
                        f"ingest-SECRET-KEY-{rid}",
                    ),
                    # Query values a pattern would cut short: a quote inside a stream id, a
                    # passphrase of words, a token in quotes.
                    _entry(
                        f"{pub}/backup",
                        f"srt://srt2.partner.example:9000?streamid=sid-SECRET-{rid}'bob'"
                        f"&passphrase=horse SECRET battery staple {rid}&latency=2000",
                        "",
                    ),
                    _entry(
                        f"{pub}/backup",
                        f'rtmp://ingest2.partner.example/app?token="tok-SECRET-QUOTED-{rid}"',
                        f"ingest2-SECRET-KEY-{rid}",
                    ),
                ],
            }
        elif i == 3:
            body = {
                "name": "Evening show (scheduled)",
                "active": True,
                "restreams": [
                    _entry(
                        f"{pub}/news",
                        "rtmp://stream.vk.example/live",
                        f"vk-SECRET-KEY-{rid}",
                        schedule=evening_schedule(start),
                    )
                ],
            }
        elif i == 4:
            body = {
                # A name holding a URL with credentials, as people paste them.
                "name": (
                    "Archived campaign (was rtmp://ops:name-SECRET-PASS-"
                    f"{rid}@archive.partner.example/live?token=name-SECRET-TOKEN-{rid})"
                ),
                "active": False,
                "restreams": [
                    _entry(f"{pub}/promo", "rtmp://live.ok.example/live", f"ok-SECRET-KEY-{rid}")
                ],
            }
        else:
            rnd = Stream(key_hash(seed, "restream", account, rid))
            active = rnd.next() >= 0.1
            scheduled = rnd.next() < 0.2
            body = {
                "name": f"Generated restream {i}",
                "active": active,
                "restreams": [
                    _entry(
                        f"{pub}/ch-{i:03d}",
                        "rtmp://a.rtmp.youtube.com/live2",
                        f"gen-SECRET-KEY-{rid}",
                        schedule=evening_schedule(start) if scheduled else None,
                    )
                ],
            }
        out.append({"resource_id": rid, "type": "short", **body})
    return out


def dvr_streams(account: str, config: SimConfig) -> tuple[DvrStream, ...]:
    """`live/main` on every node, `news` on two, then `live/ch-003`... on two nodes each."""
    hosts = config.dvr_hosts
    out: list[DvrStream] = []
    for i in range(1, config.dvr_streams_per_account + 1):
        if i == 1:
            out.append(DvrStream("live/main", hosts, "continuous", config.dvr_window_seconds, True))
            continue
        if i == 2:
            pair = (hosts[0], hosts[-1]) if len(hosts) > 1 else hosts
            out.append(DvrStream("news", pair, "shows", config.dvr_window_seconds, True))
            continue
        rnd = Stream(key_hash(config.seed, "dvr", account, i))
        first = rnd.integer(0, len(hosts) - 1)
        picked = tuple(sorted({hosts[first], hosts[(first + 1) % len(hosts)]}))
        pattern = "continuous" if rnd.next() < 0.7 else "shows"
        enabled = rnd.next() >= 0.05
        out.append(
            DvrStream(f"live/ch-{i:03d}", picked, pattern, config.dvr_window_seconds, enabled)
        )
    return tuple(out)
