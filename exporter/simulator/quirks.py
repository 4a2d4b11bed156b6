"""Quirks: real-platform shapes the simulator can imitate, one name each (`--quirk NAME`).

The simulator follows the documented API by default. A quirk switches on one way the real
platform is known to differ (shared upstream facts), so tests, the demo and anyone debugging
can see the exporter cope with it. Quirks can be given at start (`--quirk`, repeatable, or
`quirks: [...]` in the YAML file) and changed while running (`Simulator.quirks`, or
`POST /_sim/quirks`). docs/simulator.md lists every name below; a test keeps the two in step.
"""

from __future__ import annotations

from collections.abc import Iterable

# name -> what the simulator then does. Keep names kebab-case; add new ones at the end.
QUIRKS: dict[str, str] = {
    "empty-401": (
        "a missing, unknown or expired token is answered HTTP 401 with an empty body on every "
        "endpoint (the token endpoint included), instead of 403 with a JSON error body"
    ),
    "one-minute-window": (
        "a metrics window longer than a minute is answered HTTP 200 with the last minute's "
        "figures only, `start` echoed accordingly (newer docs: data for a 1-minute period)"
    ),
    "string-values": (
        "metrics replies send the request-time ranges nested, with numeric strings as values "
        'and upper-case `M` in the range names (`"1M_2M": "0.09091"`)'
    ),
    "bad-values": (
        "the last row of a per-resource metrics reply carries unreadable gauge values: "
        '`edge_hit_ratio` NaN, `edge_bandwidth` `"n/a"`, the 0-250k edge median an object'
    ),
    "status-key": (
        'successful metrics replies carry a top-level `"status": 200` beside `data`, as the '
        "platform's docs say every reply does"
    ),
    "slow-long-windows": (
        "a metrics window longer than 2 minutes is answered HTTP 504 "
        '`{"status": "error", "description": "Request execution timeout exceeded"}`'
    ),
    "auth-token-field": (
        "the token endpoint names the token `auth_token` (as one docs field table does) "
        "instead of `token`"
    ),
    "cdn2-prefix": "issued tokens start with `cdn2_` instead of `cdn1_`",
    "token-status-body": (
        "a refused login is answered HTTP 200 with a body `status` other than 200 "
        '(`{"status": 403, "message": ...}`); wins over `empty-401` at the token endpoint'
    ),
    "token-invalid-403": (
        "a missing, unknown or expired token is answered 403 `Invalid token or no access` in "
        "every area (never `Token is expired`); `empty-401` wins when both are on"
    ),
    "bodyless-errors": (
        "every error reply (4xx and 5xx, faults included) comes without a body, as several "
        "endpoints document it"
    ),
    "description-errors": (
        "error bodies carry their text in `description` only, also where the spec's shape "
        "says `message` (restream, talking-head, token endpoint)"
    ),
    "error-420": (
        "parameter errors (400, 422) are answered HTTP 420 with "
        '`{"status": "error", "description": ...}`, as another API of the platform does'
    ),
    "rate-limit-420": (
        "requests over `api_requests_per_minute` are answered HTTP 420 "
        '`{"status": "error", "description": "Rate limit exceeded"}` without `Retry-After` '
        "(instead of 429 with `Retry-After`)"
    ),
    "rate-limit-200": (
        "requests over `api_requests_per_minute` are answered HTTP 200 with the live API's "
        '`{"status": "error", "message": "Rate limit exceeded", "description": "Request is '
        'forbidden"}`; wins over `rate-limit-420`'
    ),
    "bogus-date": (
        "every 10th metrics reply carries a `Date` header an hour ahead of the platform's "
        "clock (a proxy or a node whose clock is not synchronised); its figures are right"
    ),
    "url-in-description": (
        "the restream status description of a failing target names its target URL in clear, "
        "credentials and query included (`Source stream is not published: publish to "
        "rtmp://u:PW@host/live?token=TOK refused`)"
    ),
    "revise-after-settle": (
        "minute hh:07 of every hour gains one edge request (a 200, on the account's first "
        "resource) 30 minutes after it closed, long after its figures were final and past the "
        "exporter's default settle age: what the exporter's daily audit exists to find; "
        "`/_sim/traffic` keeps the figures from before the revision"
    ),
    "resource-churn": (
        "each account's resource list changes every 20 minutes: a resource is added, renamed "
        "(same id and cname) or deleted (never the last), drawn from the seed; a new one has "
        "traffic from the next minute on, a deleted one none, and per-resource replies leave "
        "out a resource with no minute of its life in the window"
    ),
    "drop-deleted-resources": (
        "a deleted resource (by `resource-churn` or `delete_resource`) is left out of every "
        "per-resource reply from the minute boundary it is deleted at, windows holding minutes "
        "of its life included, while the account totals keep those minutes, late data included "
        "(the platform's docs never promise a deleted resource stays in replies)"
    ),
}


def check_quirks(names: Iterable[str]) -> frozenset[str]:
    """The quirk names as a set; ValueError naming any unknown one and the known ones."""
    chosen = frozenset(str(n) for n in names)
    unknown = sorted(chosen - QUIRKS.keys())
    if unknown:
        raise ValueError(
            f"quirks: unknown quirk(s) {', '.join(unknown)}; known: {', '.join(sorted(QUIRKS))}"
        )
    return chosen
