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
