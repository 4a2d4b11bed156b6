"""The built-in platform simulator: every endpoint of the streaming-platform API, with faults.

Typical use in a test::

    sim = Simulator(SimConfig(), FakeClock())
    runner = await serve(sim, "127.0.0.1", 0)     # runner.base_url, runner.port
    sim.faults.set("traffic", "503", count=1)
    ...
    await runner.cleanup()
"""

from __future__ import annotations

from exporter.simulator.cli_args import add_cli_arguments, config_from_args
from exporter.simulator.config import DEFAULT_ACCOUNTS, DEFAULT_DVR_HOSTS, SimConfig
from exporter.simulator.dataset import CdnResource, DvrStream
from exporter.simulator.faults import AREAS as FAULT_AREAS
from exporter.simulator.faults import KINDS as FAULT_KINDS
from exporter.simulator.faults import Fault, Faults
from exporter.simulator.requests_log import RecordedRequest, RequestLog
from exporter.simulator.server import SimRunner, parse_listen, run_forever, serve
from exporter.simulator.simulator import SIM_KEY, Simulator

__all__ = [
    "DEFAULT_ACCOUNTS",
    "DEFAULT_DVR_HOSTS",
    "FAULT_AREAS",
    "FAULT_KINDS",
    "SIM_KEY",
    "CdnResource",
    "DvrStream",
    "Fault",
    "Faults",
    "RecordedRequest",
    "RequestLog",
    "SimConfig",
    "SimRunner",
    "Simulator",
    "add_cli_arguments",
    "config_from_args",
    "parse_listen",
    "run_forever",
    "serve",
]
