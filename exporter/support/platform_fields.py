"""The platform's traffic field names: status codes and size ranges, as its API documents them.

One copy, read by both sides of the wire: the traffic parser (what a reply may hold) and the
simulator (what it answers). Source: the traffic fields table of the platform's API reference.
"""

from __future__ import annotations

SIDES = ("edge", "origin")
STATUS_CODES = (
    "200", "204", "206", "2xx",
    "301", "302", "304", "3xx",
    "400", "401", "403", "404", "416", "429", "4xx",
    "500", "501", "502", "503", "504", "505", "5xx",
)  # fmt: skip
SIZE_RANGES = ("0_250k", "250k_500k", "500k_750k", "750k_1m", "1m_2m", "2m_3m", "3m_4m", "4M+")
