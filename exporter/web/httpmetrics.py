"""The exporter's own HTTP server counted: one aiohttp middleware, outermost on the main app.

Every request is counted once, by the route's template and the status it was answered with,
and its handling time observed, refusals included (basic auth's 401 and 429, the admin API's
401, 403, 404 and 429, the lifecycle route's 403)::

    cdnvideo_exporter_http_requests_total{code="200",handler="/metrics"} 12.0
    cdnvideo_exporter_http_requests_total{code="401",handler="/api/v1/openapi.json"} 3.0
    cdnvideo_exporter_http_request_duration_seconds_bucket{handler="/metrics",le="0.005"} 12.0

The main app's middlewares wrap the ``/api/v1`` sub-app's too (aiohttp applies every app's on
a request's way, the parent's outermost), so this one middleware sees the admin requests
before the admin gate refuses any. ``handler`` is the template aiohttp matched
(``resource.canonical``, the sub-app's prefix included, a pattern's regular expression left
out), never the raw path: a path no route matches (aiohttp's own 404 and 405) is counted
under ``UNMATCHED``, so a scan of random paths adds no series.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware
from prometheus_client import Counter, Histogram

UNMATCHED = "unmatched"  # the handler label of a path no route matches
# Statuses of a refusal, exposed at 0 for each admin route from the start, so the first
# refusal is an increase (the alert CdnvideoExporterAdminRequestsRefused reads them).
REFUSALS = ("401", "403", "429")


def handler_label(request: web.Request) -> str:
    """The route template ``request`` matched, or ``UNMATCHED``."""
    resource = request.match_info.route.resource
    return UNMATCHED if resource is None else resource.canonical


def http_metrics(
    requests: Counter, duration: Histogram, timer: Callable[[], float] = time.perf_counter
) -> Middleware:
    """The middleware counting into ``requests`` (labels ``handler``, ``code``) and
    observing ``duration`` (label ``handler``); ``timer`` measures (a test moves its own)."""

    @web.middleware
    async def count(request: web.Request, handler: Handler) -> web.StreamResponse:
        label = handler_label(request)
        start = timer()

        def done(status: int) -> None:
            duration.labels(label).observe(max(0.0, timer() - start))
            requests.labels(label, str(status)).inc()

        try:
            response = await handler(request)
        except web.HTTPException as exc:  # raised, not returned: aiohttp's 404 and 405 too
            done(exc.status)
            raise
        except Exception:  # no HTTP answer: aiohttp answers 500
            done(500)
            raise
        done(response.status)  # a request cancelled (the client went away) is not counted
        return response

    return count


def expose_refusals(requests: Counter, templates: Iterable[str]) -> None:
    """Create the refusal series of ``templates`` at 0 (``REFUSALS``)."""
    for template in templates:
        for code in REFUSALS:
            requests.labels(template, code)
