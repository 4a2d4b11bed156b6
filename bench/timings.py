"""``python -m bench.timings``: speed figures that unit tests must not assert (a shared machine
under load makes any bound a flake), printed to read and compare by hand.

Each figure is the median of a few runs of one CPU-bound job of the exporter:
- redactor, learn one by one: 3,000 fetched tokens added one at a time (a pattern recompiled
  on each add took minutes);
- redactor, one shared prefix: ``MAX_LEARNED_SECRETS`` secrets learned at once, all with the
  same first characters, then 200 lines masked (the worst case of its prefix index);
- admin, largest accepted body: a restream create of 4,096 entries (about 830 KB, under the
  1 MiB body limit), each with masks where none can stand, checked as the handler checks it
  (its misplaced-mask checks were quadratic: 4.4 s);
- throttle, past 10,000 keys: 10,000 failed authentications, each with a credential and an
  address of its own, against a table already full (each one cost 2.9 ms and growing).
- remote write, one account-minute: the true-time samples of a final minute (account families
  and 4 series a resource) built and encoded (protobuf + snappy), at 1,000 and 5,000 resources.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Sequence

from exporter.remotewrite.samples import FinalRun, minute_series
from exporter.remotewrite.wire import count, encode
from exporter.restream.identity import KeyFingerprint
from exporter.support.clock import FakeClock
from exporter.support.logs import MASK, MAX_LEARNED_SECRETS, Redactor
from exporter.web.admin.restore import restore_secrets
from exporter.web.admin.validation import check_restream_resource
from exporter.web.masking import SecretMask
from exporter.web.ratelimit import MAX_KEYS, FailureThrottle


def learn_one_by_one(count: int = 3000) -> None:
    r = Redactor()
    for i in range(count):
        r.add(f"token-{i:05d}-{'z' * 40}")
    line = "GET /x " * 20 + f"token-{count - 1:05d}-{'z' * 40}"
    assert r.text(line) == "GET /x " * 20 + MASK


def one_shared_prefix(count: int = MAX_LEARNED_SECRETS, lines: int = 200) -> None:
    r = Redactor()
    r.learn(*(f"k0-{i:06d}-{'x' * 40}" for i in range(count)))
    line = f"a k0-000017-{'x' * 40} b k0-{'x' * 60}"
    for _ in range(lines):
        assert r.text(line) == f"a {MASK} b k0-{'x' * 60}"


def largest_body(entries: int = 4096) -> None:
    body = {
        "name": "big",
        "type": "short",
        "active": True,
        "restreams": [
            {
                "source": f"rtmp://in.example/live/s{i}",
                "target_url": f"rtmp://t{i}.example/live?token={MASK}x{i}",
                "target_key": f"k{MASK}{i}",
                "password": f"{MASK}#0123456789ab",
                "target_type": "customRTMP",
            }
            for i in range(entries)
        ],
    }
    assert check_restream_resource(body) == []
    _, errors = restore_secrets(body, None, SecretMask(KeyFingerprint(b"k")), "a new resource")
    assert len(errors) == 3 * entries


def throttle_full(failures: int = 10_000) -> None:
    throttle = FailureThrottle(FakeClock(), 10, "")
    for i in range(MAX_KEYS + failures):
        throttle.failed(f"10.{i // 65536}.{i // 256 % 256}.{i % 256}", {}, f"guess-{i}")
    assert len(throttle) == MAX_KEYS


def remote_write_minute(resources: int) -> Callable[[], None]:
    """One final minute of an account with ``resources`` resources, to request bytes."""
    figures = {"edge_requests_total": 1000.0, "origin_requests_total": 100.0}
    figures |= {"edge_transferred_bytes": 5e6, "origin_transferred_bytes": 5e5}
    figures |= {f"edge_status_{code}": 10.0 for code in ("200", "206", "404", "502")}
    run = FinalRun("acme", 60, 120, figures, {str(i): figures for i in range(resources)})

    def job() -> None:
        (series,) = minute_series(run, lambda name: True).values()
        assert count(encode(series)) == len(series)

    return job


JOBS: dict[str, Callable[[], None]] = {
    "redactor, learn 3000 one by one": learn_one_by_one,
    f"redactor, {MAX_LEARNED_SECRETS} with one prefix, 200 lines": one_shared_prefix,
    "admin, largest accepted body (4096 entries, masks misplaced)": largest_body,
    f"throttle, {MAX_KEYS} keys held + 10000 failures": throttle_full,
    "remote write, one account-minute, 1000 resources": remote_write_minute(1000),
    "remote write, one account-minute, 5000 resources": remote_write_minute(5000),
}


def seconds(job: Callable[[], None], runs: int) -> float:
    """The median wall time of ``runs`` runs of ``job``."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        job()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m bench.timings", description="speed figures of CPU-bound jobs"
    )
    p.add_argument("--runs", type=int, default=5, help="runs per figure (median shown)")
    args = p.parse_args(argv)
    width = max(len(name) for name in JOBS)
    print(f"{'job':<{width}}  median ms")
    for name, job in JOBS.items():
        print(f"{name:<{width}}  {seconds(job, max(1, args.runs)) * 1000:9.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
