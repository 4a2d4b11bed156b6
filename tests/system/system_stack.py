"""The system under test: the simulator, the exporter and a real Prometheus on local ports.

``start_stack`` starts the three processes (each one registered with ``Processes`` before the
next starts, so the caller's teardown stops whatever did start), drives the simulator and the
admin API so that every metric family and every series an alert selects exists, and returns
once Prometheus has scraped all of them.

What it sets up beyond a plain start:

- a ``503`` on the first DVR request (retried by the exporter, so no poll fails): gives
  ``cdnvideo_upstream_requests_total`` a non-2xx code, which the upstream-error alert selects;
- a traffic state file putting ``demo-shop`` 30 minutes behind with ``catch_up_minutes: 5``:
  its first poll gives up on the older minutes, so ``cdnvideo_traffic_windows_total`` has
  ``outcome="missed"`` (as after a long outage);
- the simulator quirk ``bad-values`` (unreadable gauge values in one resource row), so that
  ``cdnvideo_upstream_values_rejected_total`` exists;
- one talking-head task submitted through ``POST /api/v1/talking-head/{account}/generate``,
  so that ``cdnvideo_talking_head_tasks`` exists.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, TypeVar

import yaml

from exporter.traffic.auditor import audit_path
from tests.deploy.deploy_helpers import FAMILIES, HISTOGRAMS, REPO, RULES

JOB = "cdnvideo-exporter"
SIM_TOKEN = "demo-token"
ACCOUNTS = ("demo-media", "demo-shop")
DVR_STREAMS = ("live/main", "news")
READ_TOKEN = "system-test-read-token-0123456789"
WRITE_TOKEN = "system-test-write-token-0123456789"
REMOTE_WRITE_PREFIX = "cdnvideo_remote_write_"
MISSED_ACCOUNT = "demo-shop"  # starts 30 minutes behind with catch_up_minutes 5
BEHIND_MINUTES = 30
CATCH_UP_MINUTES = 5

STARTUP_SECONDS = 60.0  # generous: a loaded 2-core CI machine; a normal start takes ~15 s
POLL_SECONDS = 0.25

# Series the setup above makes exist; the fixture waits for them as well as every family.
PROVOKED = (
    'cdnvideo_upstream_requests_total{code!~"2..|3.."}',
    f'cdnvideo_traffic_windows_total{{outcome="missed",account="{MISSED_ACCOUNT}"}}',
    'cdnvideo_talking_head_tasks{status="in_queue"}',
)

T = TypeVar("T")


class NotYet(Exception):
    """Raised by a ``wait_for`` probe to say what is still missing."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def http(
    method: str,
    url: str,
    body: Any = None,
    headers: dict[str, str] | None = None,
    timeout: float = 10.0,
) -> tuple[int, bytes, dict[str, str]]:
    """(status, body, headers); HTTP errors are answers too, connection errors raise OSError."""
    data = None if body is None else json.dumps(body).encode()
    all_headers = {"Content-Type": "application/json"} if data is not None else {}
    all_headers.update(headers or {})
    req = urllib.request.Request(url, data=data, method=method, headers=all_headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, resp.read(), dict(resp.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(), dict(exc.headers)


def all_selected(board: dict[str, Any]) -> dict[str, str]:
    """Each variable of a dashboard at "All" (its allValue), the dashboards' default."""
    return {
        v["name"]: v.get("allValue") or ".*"
        for v in board["templating"]["list"]
        if v["type"] in ("query", "custom")
    }


def finite(value: str) -> bool:
    return math.isfinite(float(value))


def has_data(reply: dict[str, Any]) -> bool:
    """A successful instant query with at least one finite sample (NaN draws nothing)."""
    if reply.get("status") != "success":
        return False
    data = reply["data"]
    if data["resultType"] in ("scalar", "string"):
        return data["resultType"] == "scalar" and finite(data["result"][1])
    return any(finite(item["value"][1]) for item in data["result"])


def summary(reply: dict[str, Any]) -> str:
    if reply.get("status") != "success":
        return f"{reply.get('errorType')}: {reply.get('error')}"
    data = reply["data"]
    if data["resultType"] == "scalar":
        return f"scalar {data['result'][1]}"
    values = [item["value"][1] for item in data["result"]]
    return f"{len(values)} series, values {values[:5]}" if values else "no series"


class Processes:
    """Child processes with their logs; ``stop()`` ends every one (SIGTERM, then SIGKILL)."""

    def __init__(self, logdir: Path) -> None:
        self.logdir = logdir
        self._procs: list[tuple[str, subprocess.Popen[bytes], IO[bytes]]] = []

    def start(self, name: str, args: list[str], env: dict[str, str] | None = None) -> None:
        log = open(self.logdir / f"{name}.log", "wb")  # noqa: SIM115  closed in stop()
        try:
            proc = subprocess.Popen(
                args,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=REPO,
                env=env,
                start_new_session=True,  # a Ctrl-C in the terminal reaches pytest only
            )
        except BaseException:
            log.close()
            raise
        self._procs.append((name, proc, log))

    def check_running(self) -> None:
        for name, proc, _ in self._procs:
            if proc.poll() is not None:
                raise AssertionError(f"{name} exited with {proc.returncode}\n{self.logs()}")

    def tail(self, name: str, lines: int = 25) -> str:
        text = (self.logdir / f"{name}.log").read_text(encoding="utf-8", errors="replace")
        return "\n".join(text.splitlines()[-lines:])

    def logs(self) -> str:
        return "\n".join(
            f"--- {name} (last lines) ---\n{self.tail(name)}" for name, _, _ in self._procs
        )

    def stop_one(self, name: str) -> None:
        """End the process started as ``name`` (SIGTERM: it shuts down as it would in service),
        keeping the others running."""
        for entry in [e for e in self._procs if e[0] == name]:
            _, proc, log = entry
            proc.terminate()
            try:
                proc.wait(timeout=30)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait(timeout=10)
                log.close()
            self._procs.remove(entry)

    def stop(self) -> None:
        for _, proc, _ in self._procs:
            if proc.poll() is None:
                proc.terminate()
        for _, proc, log in self._procs:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
            log.close()
        self._procs.clear()


def wait_for(
    what: str,
    probe: Callable[[], T | None],
    timeout: float,
    procs: Processes | None = None,
    interval: float = POLL_SECONDS,
) -> T:
    """Call ``probe`` until it returns something other than None/False (connection errors and
    ``NotYet`` count as not yet); after ``timeout`` seconds fail naming ``what``, the last
    answer and the processes' last log lines."""
    deadline = time.monotonic() + timeout
    last: object = None
    while True:
        if procs is not None:
            procs.check_running()
        try:
            result = probe()
        except (OSError, NotYet) as exc:
            result, last = None, exc
        else:
            last = result
        if result is not None and result is not False:
            return result
        if time.monotonic() >= deadline:
            logs = f"\n{procs.logs()}" if procs is not None else ""
            raise AssertionError(f"{what}: not within {timeout:.0f} s (last: {last!r}){logs}")
        time.sleep(interval)


@dataclass
class Stack:
    sim_url: str
    exporter_url: str
    prom_url: str
    instance: str  # the exporter's instance label in Prometheus
    procs: Processes

    # --- Prometheus -------------------------------------------------------------------------
    def query(self, expr: str) -> dict[str, Any]:
        """The reply of an instant query (an error reply too: status, errorType, error)."""
        url = f"{self.prom_url}/api/v1/query?{urllib.parse.urlencode({'query': expr})}"
        status, body, _ = http("GET", url)
        reply: dict[str, Any] = json.loads(body)
        reply["http_status"] = status
        return reply

    def vector(self, expr: str) -> list[dict[str, Any]]:
        reply = self.query(expr)
        assert reply["status"] == "success", f"{expr}: {summary(reply)}"
        result: list[dict[str, Any]] = reply["data"]["result"]
        return result

    def api(self, path: str) -> Any:
        status, body, _ = http("GET", f"{self.prom_url}/api/v1/{path}")
        assert status == 200, f"{path}: HTTP {status} {body[:300]!r}"
        reply = json.loads(body)
        assert reply["status"] == "success", reply
        return reply["data"]

    def alerts(self, name: str) -> list[dict[str, Any]]:
        return [a for a in self.api("alerts")["alerts"] if a["labels"]["alertname"] == name]

    # --- exporter and simulator -------------------------------------------------------------
    def metrics(self, accept_gzip: bool = False) -> bytes:
        headers = {"Accept-Encoding": "gzip"} if accept_gzip else {}
        status, body, resp_headers = http("GET", f"{self.exporter_url}/metrics", headers=headers)
        assert status == 200, body[:300]
        if accept_gzip:
            assert resp_headers.get("Content-Encoding") == "gzip", resp_headers
            return gzip.decompress(body)
        return body

    def sim(self, method: str, path: str, body: Any = None) -> Any:
        headers = {"CDN-AUTH-TOKEN": SIM_TOKEN}
        status, data, _ = http(method, f"{self.sim_url}{path}", body, headers)
        assert 200 <= status < 300, f"{method} {path}: HTTP {status} {data[:300]!r}"
        return json.loads(data) if data else None


def expected_names() -> set[str]:
    """Every sample name the exporter exposes when all its families have data."""
    names: set[str] = set()
    for family in FAMILIES:
        if family.startswith(REMOTE_WRITE_PREFIX):
            continue  # remote_write is off here: test_system_remote_write.py has a receiver
        if family in HISTOGRAMS:
            names |= {f"{family}_bucket", f"{family}_sum", f"{family}_count"}
        else:
            names.add(family)
    return names


def _state_file(path: Path) -> None:
    """A traffic state file from an exporter that stopped BEHIND_MINUTES ago (one account),
    with the lateness its settle reads had measured (the simulator's settles within the
    default 5-minute read, later than the stack's start-up wait)."""
    from exporter.traffic.counters import Late
    from exporter.traffic.ledger import AccountLedger
    from exporter.traffic.state import dump

    now = time.time()
    ledger = AccountLedger()
    ledger.cursor = int(now // 60) * 60 - BEHIND_MINUTES * 60
    ledger.late = {5: Late(requests=1200.0, hit_bytes=5.0e6, share=0.004)}
    ledger.late_share, ledger.last_stage_share = 0.004, 0.004
    path.write_bytes(dump({MISSED_ACCOUNT: ledger}, now))
    _audit_record(Path(audit_path(str(path))), now)


def _audit_record(path: Path, now: float) -> None:
    """An audit record from before the restart: yesterday's audit of each account found its
    60 minutes equal (the stack's life is too short for an audit of its own)."""
    from exporter.traffic.audit import AuditBook, Outcome
    from exporter.traffic.parse import COUNT_KEYS

    book = AuditBook()
    for account in ACCOUNTS:
        a = book.account(account)
        a.due_at = now + 86_400
        a.minutes = {"equal": 60, "differs": 0}
        a.last = Outcome(now - 3600, 60, 0, array("d", [0.0]) * len(COUNT_KEYS))
    path.write_text(json.dumps(book.to_json()), encoding="utf-8")


def _exporter_config(sim_url: str, port: int, state: Path) -> dict[str, Any]:
    return {
        "upstream": {"base_url": sim_url, "token": SIM_TOKEN},
        "accounts": [{"name": a, "dvr_streams": list(DVR_STREAMS)} for a in ACCOUNTS],
        # minutes that closed a minute ago are read at once, so traffic appears on start
        "traffic": {
            "delay_seconds": 60,
            "catch_up_minutes": CATCH_UP_MINUTES,
            "state_file": str(state),
        },
        "restream": {"interval_seconds": 2, "history_interval_seconds": 5},
        "dvr": {"interval_seconds": 2},
        "listen": f"127.0.0.1:{port}",
        "admin": {"enabled": True, "read_token": READ_TOKEN, "write_token": WRITE_TOKEN},
        "log": {"level": "info", "format": "json"},
    }


def _prometheus_config(exporter: str) -> dict[str, Any]:
    return {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(RULES)],
        "scrape_configs": [{"job_name": JOB, "static_configs": [{"targets": [exporter]}]}],
    }


def start_prometheus(
    procs: Processes,
    prometheus: str,
    tmp: Path,
    config: dict[str, Any],
    port: int,
    data: Path | None = None,
) -> None:
    """A real Prometheus with ``config`` (written to ``tmp``), its data in ``data`` (default:
    a new directory in ``tmp``; data there is kept whatever its age)."""
    path = tmp / "prometheus.yml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    kept = ["--storage.tsdb.retention.time=100y"] if data is not None else []
    procs.start(
        "prometheus",
        [
            prometheus,
            f"--config.file={path}",
            f"--storage.tsdb.path={data or tmp / 'prometheus-data'}",
            *kept,
            f"--web.listen-address=127.0.0.1:{port}",
        ],
    )


def promql_quantile(q: float, values: list[float]) -> float:
    """What PromQL's ``quantile_over_time`` gives for these values: linear between the
    closest ranks."""
    ranked = sorted(values)
    rank = q * (len(ranked) - 1)
    low = int(rank)
    high = min(low + 1, len(ranked) - 1)
    return ranked[low] + (ranked[high] - ranked[low]) * (rank - low)


TALKING_HEAD_TASK = {
    "script": "Good morning! This is the system test speaking.",
    "actor": {"name": "Natalia", "version": "latest", "shot": "waist"},
    "voice": "Alena",
    "video_name": "system test",
}


def start_stack(tmp: Path, prometheus: str, procs: Processes) -> Stack:
    sim_port, exporter_port, prom_port = free_port(), free_port(), free_port()
    instance = f"127.0.0.1:{exporter_port}"
    stack = Stack(
        sim_url=f"http://127.0.0.1:{sim_port}",
        exporter_url=f"http://{instance}",
        prom_url=f"http://127.0.0.1:{prom_port}",
        instance=instance,
        procs=procs,
    )
    # The exporter must not pick up a developer's CDNVIDEO_* settings (token, shard, ...).
    env = {k: v for k, v in os.environ.items() if not k.startswith("CDNVIDEO_")}

    # Prometheus first: it takes longest to its first scrape.
    start_prometheus(procs, prometheus, tmp, _prometheus_config(instance), prom_port)
    procs.start(
        "simulator",
        [sys.executable, "-m", "exporter", "simulate", "--listen", f"127.0.0.1:{sim_port}"],
        env,
    )
    wait_for(
        "simulator answers",
        lambda: http("GET", f"{stack.sim_url}/_sim/")[0] == 200,
        STARTUP_SECONDS,
        procs,
    )
    # one failed DVR request, retried: an error code in the upstream counters, no failed poll
    stack.sim("POST", "/_sim/faults", {"area": "dvr", "kind": "503", "count": 1})
    # unreadable gauge values in one resource row: cdnvideo_upstream_values_rejected_total
    stack.sim("POST", "/_sim/quirks", {"quirks": ["bad-values"]})

    state = tmp / "traffic-state.json"
    _state_file(state)
    config = tmp / "exporter.yml"
    config.write_text(
        yaml.safe_dump(_exporter_config(stack.sim_url, exporter_port, state)), encoding="utf-8"
    )
    procs.start("exporter", [sys.executable, "-m", "exporter", "run", "--config", str(config)], env)
    wait_for(
        "exporter /readyz",
        lambda: http("GET", f"{stack.exporter_url}/readyz")[0] == 200,
        STARTUP_SECONDS,
        procs,
    )
    status, body, _ = http(
        "POST",
        f"{stack.exporter_url}/api/v1/talking-head/{ACCOUNTS[0]}/generate",
        TALKING_HEAD_TASK,
        {"Authorization": f"Bearer {WRITE_TOKEN}"},
    )
    assert status in (200, 202), f"talking-head generate: HTTP {status} {body[:300]!r}"
    assert json.loads(body).get("id"), body

    wait_for(
        "Prometheus /-/ready",
        lambda: http("GET", f"{stack.prom_url}/-/ready")[0] == 200,
        STARTUP_SECONDS,
        procs,
    )
    wanted = expected_names()

    def scraped_everything() -> bool:
        names = {
            s["metric"]["__name__"] for s in stack.vector(f'count by (__name__) ({{job="{JOB}"}})')
        }
        if missing := sorted(wanted - names):
            raise NotYet(f"no samples yet of {missing}")
        if missing := [expr for expr in PROVOKED if not stack.vector(expr)]:
            raise NotYet(f"no samples yet of {missing}")
        return True

    wait_for("Prometheus scraped every family", scraped_everything, STARTUP_SECONDS, procs)
    return stack
