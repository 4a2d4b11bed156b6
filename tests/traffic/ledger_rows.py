"""Rows and windows the ledger tests build: one minute `w(m)` after `T`, a totals `row` and a
resource's `res` row."""

from __future__ import annotations

from exporter.traffic.parse import ResourceRow, Row, parse_row
from exporter.traffic.windows import Window

T = 1_767_225_600


def row(requests: float, **extra: float) -> Row:
    return parse_row({"edge_requests_total": requests, **extra})


def res(rid: str, requests: float) -> ResourceRow:
    return ResourceRow(rid, f"name-{rid}", f"{rid}.example", row(requests))


def w(minute: int, minutes: int = 1) -> Window:
    return Window(T + minute * 60, T + (minute + minutes) * 60)
