"""A schemathesis check of the exporter's own contract: schema-valid requests are not refused.

Loaded by ``schemathesis`` through ``SCHEMATHESIS_HOOKS`` (see test_schemathesis.py).
"""

from __future__ import annotations

from typing import Any

import schemathesis
from schemathesis.specs.openapi.checks import is_unexpected_http_status_case


@schemathesis.check
def exporter_accepts_schema_valid_requests(ctx: Any, response: Any, case: Any) -> bool | None:
    """A request the document allows is never refused by the exporter itself.

    The platform may still refuse it for reasons of its state (a task already cancelled, a
    video not ready): such an answer carries X-Upstream-Status and is not the exporter's. The
    exporter's own 422 is allowed only on operations whose document lists rules beyond the
    schemas (``x-rules``: a stop later than its start, a voice that exists).
    """
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive or is_unexpected_http_status_case(case):
        return None
    if "x-upstream-status" in response.headers:
        return None
    status = response.status_code
    rules = case.operation.definition.raw.get("x-rules")
    if status == 400 or (status == 422 and not rules):
        raise AssertionError(
            f"The exporter refused a schema-valid request with {status}: {response.text[:300]}"
        )
    return None
