"""The fault matrix as data: areas x faults, how each is injected, the outcome asserted.

``test_fault_matrix.py`` is parametrised from ``CASES``; ``docs/reliability.md`` carries the
table ``markdown()`` renders (``test_reliability_doc_shows_the_matrix`` keeps them equal).
"""

from __future__ import annotations

from dataclasses import dataclass

from .rig import SLOW, TIMEOUT

AREAS = ("traffic", "restream", "dvr", "talking_head", "auth")

# fault -> how the simulator injects it
FAULTS: dict[str, str] = {
    "500": "HTTP 500 with the area's error body",
    "503": "HTTP 503 with the area's error body",
    "504": "HTTP 504 with the area's error body",
    "slow": f"the reply comes after {SLOW:g} s; `timeout_seconds` is {TIMEOUT:g}",
    "malformed": "HTTP 200, `application/json`, truncated JSON",
    "reset": "TCP reset, no reply",
    "error_200": 'HTTP 200 with `{"status": "error", "message": "Rate limit exceeded"}`',
    "expired_token": "every issued token expires: 403 `Token is expired` (login mode)",
    "refuse_password": "every issued token expires and the token endpoint refuses the password",
}
HTTP_FAULTS = ("500", "503", "504", "slow", "malformed", "reset", "error_200")
# What an admin read (/api/v1/...) of a failing area answers, observed and asserted: the
# upstream's status and body where there is one, 504 / 502 where there is none. A 2xx that is
# no answer (malformed, error body) passes through as 200; see docs/reliability.md.
ADMIN_STATUS = {
    "500": 500,
    "503": 503,
    "504": 504,
    "slow": 504,
    "malformed": 502,
    "reset": 502,
    "error_200": 502,
    "expired_token": 200,
    "refuse_password": 502,
}

# Scenario names and the outcome each one asserts (the "observed" column: the suite passes).
OUTAGE = "outage"
AUTH_OUTAGE = "auth_outage"
RENEWED = "renewed"
REJECTED = "rejected"
OUTCOMES = {
    OUTAGE: (
        "area's `cdnvideo_up` 0 for both accounts, other areas 1; `/metrics` answers while the "
        "area's request is held at the simulator; last good values exported until 5 intervals "
        "old, then dropped; "
        "after clearing: up 1, values back, traffic counters = simulator truth (gap backfilled)"
    ),
    AUTH_OUTAGE: (
        "the renewal ahead of expiry fails: `cdnvideo_up{area=auth}` 0 while the other areas "
        "go on with the still valid token; once it expires every area 0 (last values kept); "
        "at most one login per round; after clearing all 1, traffic exact"
    ),
    RENEWED: (
        "one login renews the token and the request is retried: every area stays up, "
        "nothing is dropped, traffic exact"
    ),
    REJECTED: (
        "one login attempt, never repeated (no lock-out): every area 0, also after the fault "
        "is cleared; last values kept; a restart with the state file brings all areas back "
        "with exact traffic counters. (`auth` column: the refusal comes at a renewal ahead of "
        "expiry; the areas go on with the valid token until it expires, `auth` is 0 at once)"
    ),
}


@dataclass(frozen=True)
class Case:
    area: str
    fault: str

    @property
    def scenario(self) -> str:
        if self.fault == "expired_token":
            return RENEWED
        if self.fault == "refuse_password":
            return REJECTED
        return AUTH_OUTAGE if self.area == "auth" else OUTAGE

    @property
    def id(self) -> str:
        return f"{self.area}-{self.fault}"


CASES = tuple(Case(area, fault) for area in AREAS for fault in FAULTS)

BEGIN = "<!-- fault-matrix:begin (generated from tests/reliability/matrix.py) -->"
END = "<!-- fault-matrix:end -->"


def markdown() -> str:
    """The matrix as the table in docs/reliability.md: one row per fault, one column per area,
    each cell naming the scenario asserted; then the scenarios' outcomes."""
    short = {OUTAGE: "outage", AUTH_OUTAGE: "auth outage", RENEWED: "renewed", REJECTED: "rejected"}
    lines = [
        BEGIN,
        "| fault | injected as | "
        + " | ".join(f"`{a}`" for a in AREAS)
        + " | admin read during it |",
        "|---|---|" + "---|" * (len(AREAS) + 1),
    ]
    for fault, how in FAULTS.items():
        cells = [f"pass: {short[Case(a, fault).scenario]}" for a in AREAS]
        admin = f"HTTP {ADMIN_STATUS[fault]}"
        lines.append(f"| `{fault}` | {how} | " + " | ".join(cells) + f" | {admin} |")
    lines += ["", "| scenario | outcome asserted (and observed) |", "|---|---|"]
    lines += [f"| {short[k]} | {v} |" for k, v in OUTCOMES.items()]
    lines.append(END)
    return "\n".join(lines) + "\n"
