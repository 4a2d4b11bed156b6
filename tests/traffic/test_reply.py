"""The metrics reply's parsing (exporter/traffic/reply.py); every parser against any JSON is in
tests/upstream/test_models.py."""

from __future__ import annotations

from typing import Any

from exporter.traffic import reply


def test_a_consumed_metrics_body_gives_the_same_rows_without_copies() -> None:
    """The read step's decoded reply is taken over row by row (no second set of dicts at the
    peak of a traffic poll); the rows are the same as parsed from a copy."""

    def body() -> dict[str, Any]:
        data = [
            {"resource": 7, "resource_name": None, "cname": "c", "edge_requests_total": 1},
            {"resource": "r2", "resource_name": "two", "edge_status_200": "3"},
        ]
        return {"start": "s", "end": "e", "account": "acme", "data": data}

    consumed = body()
    rows = consumed["data"]
    taken = reply.parse_metrics(consumed, per_resource=True)
    assert taken == reply.parse_metrics(body(), per_resource=True)
    assert taken.rows[0] == reply.MetricsRow({"edge_requests_total": 1}, "7", "", "c")
    assert taken.rows[0].values is rows[0]  # the decoded object itself, keys taken out
    assert taken.rows[1].values is rows[1]
    totals = reply.parse_metrics({"data": [{"edge_requests_total": 2}]}, False)
    assert totals.rows[0].values == {"edge_requests_total": 2}
