"""The two exposition formats a scrape can ask for: Prometheus text 0.0.4 and OpenMetrics 1.0.

Both are served from the same compressed sample pieces: the sample lines are the same bytes in
both (counter samples already end in ``_total``); only each family's HELP/TYPE header differs
(an OpenMetrics counter family is named without ``_total``) and OpenMetrics ends with
``# EOF``. A scrape gets OpenMetrics only when its ``Accept`` header asks for
``application/openmetrics-text`` (as Prometheus does); anything else gets the text format.
"""

from __future__ import annotations

from typing import Literal

from prometheus_client import CollectorRegistry
from prometheus_client.openmetrics.exposition import generate_latest as openmetrics_latest

Format = Literal["text", "openmetrics"]
CONTENT_TYPES: dict[Format, str] = {
    "text": "text/plain; version=0.0.4; charset=utf-8",
    "openmetrics": "application/openmetrics-text; version=1.0.0; charset=utf-8",
}
OPENMETRICS_EOF = b"# EOF\n"
_OPENMETRICS = "application/openmetrics-text"
_VERSIONS = ("1.0.0", "0.0.1")  # 0.0.1 is the pre-1.0 name of the same format


def negotiate(accept: str) -> Format:
    """The format an ``Accept`` header asks for: OpenMetrics when it lists
    ``application/openmetrics-text`` (version 1.0.0, 0.0.1 or none) with a non-zero ``q``;
    otherwise the text format, whatever else it lists."""
    for media_range in accept.split(","):
        kind, *params = (part.strip() for part in media_range.split(";"))
        if kind.lower() != _OPENMETRICS:
            continue
        options = dict(_param(p) for p in params if "=" in p)
        if options.get("version", "1.0.0") not in _VERSIONS:
            continue
        try:
            quality = float(options.get("q", "1"))
        except ValueError:
            continue
        if quality > 0:
            return "openmetrics"
    return "text"


def _param(text: str) -> tuple[str, str]:
    key, _, value = text.partition("=")
    return key.strip().lower(), value.strip().strip('"')


def escape_help(text: str, fmt: Format) -> str:
    """HELP text escaped for ``fmt``: backslash and newline in both, the double quote too in
    OpenMetrics (its grammar has no bare ``"`` in a HELP)."""
    text = text.replace("\\", "\\\\").replace("\n", "\\n")
    return text.replace('"', '\\"') if fmt == "openmetrics" else text


def registry_openmetrics(registry: CollectorRegistry) -> bytes:
    """A prometheus-client registry in OpenMetrics, without its ``# EOF`` (the store appends
    one after everything)."""
    text: bytes = openmetrics_latest(registry)  # type: ignore[no-untyped-call]
    return text[: -len(OPENMETRICS_EOF)] if text.endswith(OPENMETRICS_EOF) else text
