"""``/metrics`` in both formats, over HTTP, for the golden run (fixed simulator and clock).

Without an OpenMetrics ``Accept`` header the body is the golden text format byte for byte;
with Prometheus' own header it is OpenMetrics 1.0 that prometheus-client's OpenMetrics parser
reads, with every family and sample the text format has.
"""

from __future__ import annotations

import gzip

import aiohttp
import pytest
import structlog.testing
from prometheus_client.openmetrics.parser import text_string_to_metric_families as parse_om
from prometheus_client.parser import text_string_to_metric_families as parse_text

from exporter.exposition.formats import negotiate
from tests.golden.golden import GOLDEN, SCRAPES_COUNTED, normalise, polled, steady

# What Prometheus 2.x sends by default (scrape_protocols unset)
PROMETHEUS_ACCEPT = (
    "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;"
    "q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
)
OPENMETRICS_TYPE = "application/openmetrics-text; version=1.0.0; charset=utf-8"
TEXT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


async def _get(url: str, headers: dict[str, str]) -> tuple[str, bytes]:
    async with (
        aiohttp.ClientSession(auto_decompress=False) as session,
        session.get(f"{url}/metrics", headers=headers) as reply,
    ):
        assert reply.status == 200
        body = await reply.read()
        if reply.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        return reply.headers["Content-Type"], body


async def test_both_formats_over_http() -> None:
    with structlog.testing.capture_logs():
        async with polled() as (_app, url):
            plain_type, plain = await _get(url, {})
            gzip_type, gzipped = await _get(url, {"Accept-Encoding": "gzip"})
            om_type, om = await _get(url, {"Accept": PROMETHEUS_ACCEPT})
            omz_type, omz = await _get(
                url, {"Accept": PROMETHEUS_ACCEPT, "Accept-Encoding": "gzip"}
            )
    # no Accept header: today's text format, the golden file byte for byte, plain or gzip
    assert plain_type == gzip_type == TEXT_TYPE
    golden = GOLDEN.read_text(encoding="utf-8")
    assert normalise(plain.decode()) == golden
    assert normalise(gzipped.decode()) == golden
    # Prometheus' header: OpenMetrics 1.0
    assert om_type == omz_type == OPENMETRICS_TYPE
    # two scrapes: the same bytes but for the process' own figures (open fds, memory, CPU)
    assert steady(om.decode()) == steady(omz.decode())
    text = om.decode()
    assert text.endswith("\n# EOF\n")
    assert text.count("# EOF") == 1
    om_families = {f.name: f for f in parse_om(text)}
    text_families = {f.name: f for f in parse_text(plain.decode())}
    # counters: the family is named without _total, its samples with it
    counter = om_families["cdnvideo_account_requests"]
    assert counter.type == "counter"
    assert {s.name for s in counter.samples} == {"cdnvideo_account_requests_total"}
    assert "# TYPE cdnvideo_account_requests counter\n" in text
    assert "# TYPE cdnvideo_account_requests_total" not in text
    # the same families with the same types, samples and values in both formats
    assert om_families.keys() == text_families.keys()
    for name, family in text_families.items():
        assert om_families[name].type == family.type, name
        if name.startswith(SCRAPES_COUNTED):
            continue  # counts the scrapes themselves: a render between two shows one more
        # the process' own figures move between two scrapes: their samples, not values, agree
        moving = name.startswith("process_")
        om_samples = sorted(
            (s.name, sorted(s.labels.items()), 0.0 if moving else s.value) for s in family.samples
        )
        assert (
            sorted(
                (s.name, sorted(s.labels.items()), 0.0 if moving else s.value)
                for s in om_families[name].samples
            )
            == om_samples
        ), name
    assert sum(f.type == "counter" for f in om_families.values()) >= 10


@pytest.mark.parametrize(
    ("accept", "fmt"),
    [
        ("", "text"),
        ("text/plain", "text"),
        ("*/*", "text"),
        (PROMETHEUS_ACCEPT, "openmetrics"),
        ("application/openmetrics-text", "openmetrics"),
        ("Application/OpenMetrics-Text; version=0.0.1", "openmetrics"),
        ("text/plain;q=0.5, application/openmetrics-text; q=0.9", "openmetrics"),
        ("application/openmetrics-text; q=0", "text"),
        ("application/openmetrics-text; version=2.0.0", "text"),
        ("application/openmetrics-text; q=nonsense", "text"),
    ],
)
def test_negotiation(accept: str, fmt: str) -> None:
    assert negotiate(accept) == fmt
