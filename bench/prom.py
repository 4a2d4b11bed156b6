"""A real Prometheus scraping the exporter with the project's rules (deploy/prometheus/rules.yml):
what each rule group's evaluation costs it, and what the scrape does.

``Watch`` starts Debian's ``prometheus`` on a free loopback port with its data in a temporary
directory, one job (``cdnvideo-exporter``, the name the rules select) scraping the exporter every
``interval`` seconds, and the rules file loaded with every group evaluated at that interval (a
group's own ``interval`` as well: the cost of one evaluation does not depend on how often it
runs, and the bench's phase is shorter than a group's 5 minutes). It reads ``/api/v1/rules``
(each group's ``evaluationTime`` and ``lastEvaluation``) and ``/api/v1/targets`` while it runs
and keeps only the evaluations after the first scrape was stored, so every group is measured
over the exporter's series; ``finish`` waits until every group has ``MIN_EVALUATIONS`` of them
(bounded: ``_sample``), reads Prometheus's own metrics and stops it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import shutil
import socket
import statistics
import time
import urllib.parse
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO, Any

import aiohttp
import yaml
from prometheus_client.parser import text_string_to_metric_families

from bench import procs

RULES = Path(__file__).resolve().parents[1] / "deploy" / "prometheus" / "rules.yml"
JOB = "cdnvideo-exporter"
MIN_EVALUATIONS = 3
FIRST_SCRAPE_WITHIN = 30.0  # seconds after the phase: Prometheus's first target update waits 5
READY_WITHIN = 60.0


@dataclass
class Group:
    """One rule group's evaluations over the exporter's series (times in ms)."""

    name: str
    rules: int
    interval: str  # as in the rules file ("" when it uses the global evaluation interval)
    evaluations: int = 0
    median_ms: float = float("nan")
    max_ms: float = float("nan")
    last_ms: float = float("nan")  # prometheus_rule_group_last_duration_seconds at the end


@dataclass
class Figures:
    """What the rules and the scrape cost the Prometheus that scraped the exporter."""

    interval_s: float
    version: str = ""
    groups: list[Group] = field(default_factory=list)
    scrapes: int = 0
    scrape_s: float = float("nan")  # median lastScrapeDuration
    samples_scraped: int = 0  # scrape_samples_scraped of the last scrape
    scrape_error: str = ""
    head_series: int = 0
    rss_mb: float = float("nan")
    peak_rss_mb: float = float("nan")
    # prometheus_rule_evaluation_duration_seconds{quantile="0.99"}: every rule, every group
    rule_p99_ms: float = float("nan")

    @property
    def round_ms(self) -> float:
        """One evaluation of every group: the sum of the groups' medians."""
        return sum(g.median_ms for g in self.groups) if self.groups else float("nan")

    @property
    def worst_round_ms(self) -> float:
        return sum(g.max_ms for g in self.groups) if self.groups else float("nan")


def find() -> str | None:
    """The ``prometheus`` binary on PATH, or None."""
    return shutil.which("prometheus")


def epoch(text: str) -> float:
    """Seconds since the epoch of an RFC 3339 time as Prometheus's API gives it (nanoseconds
    cut to microseconds)."""
    head, dot, rest = text.partition(".")
    if dot:
        digits = len(rest) - len(rest.lstrip("0123456789"))
        rest = rest[: min(digits, 6)] + rest[digits:]
    return datetime.fromisoformat(head + dot + rest).timestamp()


def duration(seconds: float) -> str:
    """A Prometheus duration (whole milliseconds)."""
    return f"{max(1, round(seconds * 1000))}ms"


def rules_at(source: Path, interval: float) -> tuple[dict[str, Any], dict[str, str]]:
    """The rules file with every group at ``interval``, and each group's own interval as
    written ("" for the global one)."""
    doc = yaml.safe_load(source.read_text(encoding="utf-8"))
    own = {}
    for group in doc["groups"]:
        own[group["name"]] = str(group.get("interval", ""))
        group["interval"] = duration(interval)
    return doc, own


def config(target: str, rules: Path, interval: float) -> dict[str, Any]:
    every = duration(interval)
    return {
        "global": {
            "scrape_interval": every,
            "scrape_timeout": every,
            "evaluation_interval": every,
        },
        "rule_files": [str(rules)],
        "scrape_configs": [{"job_name": JOB, "static_configs": [{"targets": [target]}]}],
    }


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Watch:
    """A Prometheus scraping ``exporter_base`` (``http://host:port``) with the project's
    rules; ``start``, then ``finish`` for the figures (it stops the process)."""

    def __init__(self, binary: str, tmp: Path, exporter_base: str, interval: float) -> None:
        self.binary, self.tmp, self.interval = binary, tmp, interval
        self.target = exporter_base.split("://", 1)[1]
        self.url = f"http://127.0.0.1:{_free_port()}"
        self.figures = Figures(interval)
        self._proc: asyncio.subprocess.Process | None = None
        self._session: aiohttp.ClientSession | None = None  # its own: answers decompressed
        self._log: IO[bytes] | None = None
        self._sampler: asyncio.Task[None] | None = None
        self._stopped_at: float | None = None  # when finish was called (time.time())
        self._stored_at = float("inf")  # when the first scrape's samples were in
        self._evaluations: dict[str, dict[str, float]] = {}  # group -> lastEvaluation -> s
        self._scrapes: dict[str, float] = {}  # lastScrape -> lastScrapeDuration
        self._own: dict[str, str] = {}
        self._rules: dict[str, int] = {}
        self._last: dict[str, float] = {}  # group -> ms, from Prometheus's own metrics

    def _http(self) -> aiohttp.ClientSession:
        if self._session is None:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60))
        return self._session

    def log_tail(self, lines: int = 15) -> str:
        path = self.tmp / "prometheus.log"
        text = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
        return "\n".join(text.splitlines()[-lines:])

    async def start(self) -> None:
        doc, self._own = rules_at(RULES, self.interval)
        rules = self.tmp / "rules.yml"
        rules.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
        path = self.tmp / "prometheus.yml"
        path.write_text(json.dumps(config(self.target, rules, self.interval)), encoding="utf-8")
        self._log = open(self.tmp / "prometheus.log", "wb")  # noqa: SIM115, ASYNC230  closed in stop(); a local file
        self._proc = await asyncio.create_subprocess_exec(
            self.binary,
            f"--config.file={path}",
            f"--storage.tsdb.path={self.tmp / 'prometheus-data'}",
            f"--web.listen-address={self.url.split('://', 1)[1]}",
            stdin=asyncio.subprocess.DEVNULL,
            stdout=self._log,
            stderr=asyncio.subprocess.STDOUT,
        )
        deadline = time.monotonic() + READY_WITHIN
        while time.monotonic() < deadline:
            if self._proc.returncode is not None:
                raise RuntimeError(f"prometheus exited with {self._proc.returncode}:\n"
                                   + self.log_tail())  # fmt: skip
            with contextlib.suppress(aiohttp.ClientError):
                async with self._http().get(f"{self.url}/-/ready") as reply:
                    if reply.status == 200:
                        break
            await asyncio.sleep(0.2)
        else:
            raise RuntimeError(f"prometheus not ready within {READY_WITHIN:.0f} s")
        async with self._http().get(f"{self.url}/api/v1/status/buildinfo") as reply:
            self.figures.version = (await reply.json())["data"]["version"]
        self._sampler = asyncio.create_task(self._sample())

    async def _api(self, path: str) -> Any:
        async with self._http().get(f"{self.url}/api/v1/{path}") as reply:
            reply.raise_for_status()
            return (await reply.json())["data"]

    def _enough(self) -> bool:
        counts = [len(self._evaluations.get(g, {})) for g in self._own]
        return bool(counts) and min(counts) >= MIN_EVALUATIONS

    async def _sample(self) -> None:
        """Poll targets and rules until stopped and every group has its evaluations, or
        ``MIN_EVALUATIONS + 3`` intervals after the later of the stop and the first scrape
        stored (``FIRST_SCRAPE_WITHIN`` after the stop without one)."""
        every = min(1.0, self.interval / 4)
        while True:
            with contextlib.suppress(aiohttp.ClientError, KeyError, ValueError):
                self._read_targets(await self._api("targets"))
                self._read_rules(await self._api("rules"))
            if self._stopped_at is not None:
                if self._enough():
                    return
                if self._stored_at < math.inf:
                    since = max(self._stopped_at, self._stored_at)
                else:
                    since = self._stopped_at + FIRST_SCRAPE_WITHIN
                if time.time() > since + (MIN_EVALUATIONS + 3) * self.interval:
                    return
            await asyncio.sleep(every)

    def _read_targets(self, data: dict[str, Any]) -> None:
        for t in data["activeTargets"]:
            if t["labels"].get("job") != JOB:
                continue
            self.figures.scrape_error = t.get("lastError", "")
            if t["health"] != "up":
                continue
            at = t["lastScrape"]
            self._scrapes[at] = float(t["lastScrapeDuration"])
            self._stored_at = min(self._stored_at, epoch(at) + float(t["lastScrapeDuration"]))

    def _read_rules(self, data: dict[str, Any]) -> None:
        for g in data["groups"]:
            self._rules[g["name"]] = len(g["rules"])
            at = g.get("lastEvaluation", "")
            if at and epoch(at) >= self._stored_at:
                self._evaluations.setdefault(g["name"], {})[at] = float(g["evaluationTime"])

    async def finish(self) -> Figures:
        """Wait for every group's evaluations (bounded), read the figures, stop Prometheus."""
        self._stopped_at = time.time()
        try:
            if self._sampler is not None:
                await self._sampler
            await self._own_metrics()
            self._summarise()
        finally:
            await self.stop()
        return self.figures

    async def _own_metrics(self) -> None:
        f = self.figures
        assert self._proc is not None
        f.rss_mb, f.peak_rss_mb = procs.memory_mb(self._proc.pid)
        async with self._http().get(f"{self.url}/metrics") as reply:
            text = (await reply.read()).decode()
        last: dict[str, float] = {}
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                if s.name == "prometheus_tsdb_head_series":
                    f.head_series = int(s.value)
                elif s.name == "prometheus_rule_group_last_duration_seconds":
                    last[s.labels["rule_group"].rsplit(";", 1)[-1]] = s.value * 1e3
                elif (
                    s.name == "prometheus_rule_evaluation_duration_seconds"
                    and s.labels.get("quantile") == "0.99"
                ):
                    f.rule_p99_ms = s.value * 1e3
        query = urllib.parse.quote(f'scrape_samples_scraped{{job="{JOB}"}}')
        with contextlib.suppress(aiohttp.ClientError, KeyError, IndexError, ValueError):
            data = await self._api(f"query?query={query}")
            f.samples_scraped = int(float(data["result"][0]["value"][1]))
        for name in self._own:
            self._last[name] = last.get(name, float("nan"))

    def _summarise(self) -> None:
        f = self.figures
        f.scrapes = len(self._scrapes)
        if self._scrapes:
            f.scrape_s = statistics.median(self._scrapes.values())
        for name, own in self._own.items():
            times = [s * 1e3 for s in self._evaluations.get(name, {}).values()]
            g = Group(name, self._rules.get(name, 0), own, len(times))
            if times:
                g.median_ms, g.max_ms = statistics.median(times), max(times)
            g.last_ms = self._last.get(name, float("nan"))
            f.groups.append(g)

    async def stop(self) -> None:
        if self._sampler is not None:
            self._sampler.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sampler
            self._sampler = None
        if self._proc is not None and self._proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self._proc.terminate()
            try:
                await asyncio.wait_for(self._proc.wait(), 30)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    self._proc.kill()
                await self._proc.wait()
        if self._log is not None:
            self._log.close()
            self._log = None
        if self._session is not None:
            await self._session.close()
            self._session = None
