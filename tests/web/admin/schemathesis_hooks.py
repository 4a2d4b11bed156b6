"""A schemathesis check of the exporter's own contract: schema-valid requests are not refused.

Loaded by ``schemathesis`` through ``SCHEMATHESIS_HOOKS`` (see test_schemathesis.py).
"""

from __future__ import annotations

from typing import Any

import schemathesis
from schemathesis.specs.openapi.checks import is_unexpected_http_status_case


@schemathesis.check
def exporter_accepts_schema_valid_requests(ctx: Any, response: Any, case: Any) -> bool | None:
    """A request the document allows is refused by neither the exporter nor the platform.

    The document states the platform's static rules (required fields, the history period,
    the sort fields), so a schema-valid request that gets 400 or 422, the exporter's or the
    platform's (``X-Upstream-Status``), means the document says less than the platform
    checks. The one exception: an operation whose document lists rules beyond the schemas
    (``x-rules``: a stop later than its start, a voice that exists, a task not cancelled
    already) may refuse a request that breaks one of them.
    """
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive or is_unexpected_http_status_case(case):
        return None
    status = response.status_code
    rules = case.operation.definition.raw.get("x-rules")
    whose = "platform" if "x-upstream-status" in response.headers else "exporter"
    if status in (400, 422) and not rules:
        raise AssertionError(
            f"The {whose} refused a schema-valid request with {status}: {response.text[:300]}"
        )
    if status == 400 and whose == "exporter":
        raise AssertionError(f"The exporter refused a schema-valid request: {response.text[:300]}")
    return None
