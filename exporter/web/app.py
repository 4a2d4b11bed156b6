"""The exporter's aiohttp application: /metrics, /healthz and /readyz (and Prometheus' names for
them, /-/healthy and /-/ready), landing page, admin API."""

from __future__ import annotations

import json
import zlib

from aiohttp import web, web_response

from exporter.exposition.formats import CONTENT_TYPES, negotiate
from exporter.runtime.areas import Areas
from exporter.runtime.context import Context
from exporter.support.offloop import aside
from exporter.web.admin import AdminDeps, admin_app
from exporter.web.httpmetrics import expose_refusals, http_metrics
from exporter.web.landing import landing_handler
from exporter.web.readiness import ReadinessLog, readiness
from exporter.web.webauth import apply_web_config, authenticated
from exporter.web.webconfig import WebConfig

CTX: web.AppKey[Context] = web.AppKey("ctx", Context)
AREAS: web.AppKey[Areas] = web.AppKey("areas", Areas)
ADMIN_API: web.AppKey[web.Application] = web.AppKey("admin_api", web.Application)
READINESS_LOG: web.AppKey[ReadinessLog] = web.AppKey("readiness_log", ReadinessLog)
CONTENT_TYPE = CONTENT_TYPES["text"]
# A plain (not gzip) /metrics body is decompressed and sent this many bytes at a time: what a
# plain scrape holds, however large the exposition.
PLAIN_CHUNK = 1 << 20
SERVER = "cdnvideo-exporter"  # the `Server` header: no version of anything to look up


def hide_server_version() -> None:
    """aiohttp names its and Python's version in `Server`; replies it makes before routing (a
    malformed request's 400) take its default, so the default is replaced too."""
    setattr(web_response, "SERVER_SOFTWARE", SERVER)  # noqa: B010 (not re-exported)


async def server_header(request: web.Request, response: web.StreamResponse) -> None:
    response.headers["Server"] = SERVER


def _accepts_gzip(request: web.Request) -> bool:
    return "gzip" in request.headers.get("Accept-Encoding", "").lower()


async def metrics(request: web.Request) -> web.StreamResponse:
    """Serve the pre-rendered exposition; no rendering happens at scrape time."""
    store = request.app[CTX].store
    exposition = store.exposition
    store.mark_served(exposition)  # new counter series held at 0 until a scrape saw the 0
    fmt = negotiate(request.headers.get("Accept", ""))
    headers = {"Content-Type": CONTENT_TYPES[fmt], "Vary": "Accept, Accept-Encoding"}
    if _accepts_gzip(request):
        headers["Content-Encoding"] = "gzip"
        return web.Response(body=exposition.compressed(fmt), headers=headers)
    return await _plain(request, exposition.compressed(fmt), headers)


class _Inflate:
    """The text of a gzip body, ``PLAIN_CHUNK`` bytes at a time. The compressed input is fed
    ``STEP`` bytes at a time (zlib copies what a call leaves unread into ``unconsumed_tail``:
    fed whole, every chunk would copy the rest of the body)."""

    STEP = 1 << 16

    def __init__(self, gzipped: bytes) -> None:
        self._body = memoryview(gzipped)
        self._at = 0
        self._inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
        self._cut = False  # the body ended before its gzip member did (never one we made)

    @property
    def done(self) -> bool:
        return self._inflate.eof or self._cut

    def chunk(self) -> bytes:
        """The next text, at most ``PLAIN_CHUNK`` bytes (less only at the end)."""
        inflate, out, size = self._inflate, [], 0
        while size < PLAIN_CHUNK and not self.done:
            data: bytes | memoryview = inflate.unconsumed_tail
            if not data:
                data = self._body[self._at : self._at + self.STEP]
                self._at += len(data)
            piece = inflate.decompress(data, PLAIN_CHUNK - size)
            self._cut = not piece and not data
            out.append(piece)
            size += len(piece)
        return b"".join(out)


async def _plain(
    request: web.Request, gzipped: bytes, headers: dict[str, str]
) -> web.StreamResponse:
    """The body of ``gzipped`` decompressed and sent ``PLAIN_CHUNK`` bytes at a time, each
    decompressed off the loop: only the gzip body is kept, and a plain scrape never holds the
    whole plain text (hundreds of megabytes at tens of thousands of resources)."""
    inflate = _Inflate(gzipped)
    chunk = await aside(inflate.chunk)
    if inflate.done:  # the whole body in one chunk: sent with its length
        return web.Response(body=chunk, headers=headers)
    response = web.StreamResponse(headers=headers)
    await response.prepare(request)
    while chunk:
        await response.write(chunk)
        chunk = b"" if inflate.done else await aside(inflate.chunk)
    await response.write_eof()
    return response


async def healthz(request: web.Request) -> web.Response:
    return web.json_response({"status": "ok"})


async def readyz(request: web.Request) -> web.Response:
    ready, detail = readiness(request.app[CTX], request.app[AREAS])
    request.app[READINESS_LOG].observe(ready, detail)
    if not authenticated(request):  # an open probe: the verdict, not the account names
        detail = {"ready": ready}
    return web.json_response(detail, status=200 if ready else 503, dumps=json.dumps)


def admin_deps(areas: Areas) -> AdminDeps:
    """What the admin surface uses of the areas: the talking-head tracker, catalogue and
    quota refresh."""
    th = areas.talking_head
    return AdminDeps(th.tracker, th.poller, th.refresh_quota)


def init_app(
    ctx: Context,
    areas: Areas,
    web_config: WebConfig | None = None,
    telemetry_path: str = "/metrics",
) -> web.Application:
    """Build the web application around a ready Context and the areas (lifecycle:
    exporter.web.daemon); ``web_config`` adds basic auth and headers (its TLS context
    is the listener's). The admin surface gets the talking-head area's parts it uses."""
    hide_server_version()
    app = web.Application()
    app.on_response_prepare.append(server_header)
    app[CTX] = ctx
    app[AREAS] = areas
    # Outermost, so every answer is counted, the web config's and the admin gate's refusals too.
    app.middlewares.append(http_metrics(ctx.metrics.http_requests, ctx.metrics.http_duration))
    if web_config is not None:
        apply_web_config(app, web_config, ctx.metrics.web_config_reload_successful.set)
    app.router.add_get(telemetry_path, metrics)  # --web.telemetry-path
    app[READINESS_LOG] = ReadinessLog()
    for path in ("/healthz", "/-/healthy"):  # the second as Prometheus and its exporters name it
        app.router.add_get(path, healthz)
    for path in ("/readyz", "/-/ready"):
        app.router.add_get(path, readyz)
    app.router.add_get("/", landing_handler(ctx, areas, telemetry_path))
    if ctx.settings.admin.enabled:
        app[ADMIN_API] = admin_app(ctx, admin_deps(areas))
        app.add_subapp("/api/v1", app[ADMIN_API])
        templates = {resource.canonical for resource in app[ADMIN_API].router.resources()}
        expose_refusals(ctx.metrics.http_requests, sorted(templates))
    return app
