"""Command line: run, demo, simulate, check-config."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import secrets
import signal
import sys
from collections.abc import Sequence

import structlog
import yaml
from aiohttp import web

from exporter import __version__
from exporter.config import (
    ConfigError,
    Settings,
    load_config,
    masked_dict,
    notes,
    parse_config,
    split_host_port,
    warnings,
)
from exporter.config.cost import cost_lines
from exporter.support.logs import Redactor, configure_logging
from exporter.web.webconfig import WebConfig, load_web_config

DEMO_LISTEN = "127.0.0.1:9877"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cdnvideo-exporter",
        description="Prometheus exporter and admin gateway for the CDNvideo streaming platform.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = sub.add_parser("run", help="run the exporter daemon", description="Run the daemon.")
    run.add_argument("--config", required=True, metavar="FILE", help="YAML config file")
    run.add_argument(
        "--web.config.file",
        dest="web_config_file",
        metavar="FILE",
        help="exporter-toolkit web config (TLS, basic auth); overrides web_config_file",
    )

    demo = sub.add_parser(
        "demo",
        help="the exporter against its built-in simulator (no config, no network)",
        description="Start the platform simulator and the exporter against it, print the URLs.",
    )
    demo.add_argument("--listen", default=DEMO_LISTEN, metavar="HOST:PORT", help="exporter address")
    demo.add_argument(
        "--simulator-listen",
        default="127.0.0.1:0",
        metavar="HOST:PORT",
        help="simulator address (port 0 picks a free port)",
    )

    check = sub.add_parser(
        "check-config",
        help="validate a config file and print it with secrets masked",
        description="Validate a config; print the effective config with every secret masked.",
    )
    check.add_argument("--config", required=True, metavar="FILE", help="YAML config file")
    check.add_argument(
        "--web.config.file",
        dest="web_config_file",
        metavar="FILE",
        help="also check this exporter-toolkit web config (overrides web_config_file)",
    )

    sim = sub.add_parser(
        "simulate",
        help="run the platform simulator alone",
        description="Serve the built-in simulator of the platform API (demo data, faults).",
    )
    sim.add_argument("--listen", default="127.0.0.1:8080", metavar="HOST:PORT")
    from exporter.simulator import add_cli_arguments

    add_cli_arguments(sim)
    return parser


def config_error(exc: ConfigError) -> None:
    """One line on stderr; URL credentials and ``key: value`` secrets in it are masked (the
    loader already keeps secret keys' values out, this catches secrets quoted elsewhere)."""
    text = Redactor().text(str(exc)).replace("\n", " ")
    print(f"config error: {text}", file=sys.stderr)


def _load(path: str, web_config_file: str | None) -> tuple[Settings, WebConfig | None]:
    """The settings and, when one is named, the checked web config (ConfigError if bad)."""
    settings = load_config(path)
    if web_config_file is not None:
        settings = dataclasses.replace(settings, web_config_file=web_config_file)
    if not settings.web_config_file:
        return settings, None
    return settings, load_web_config(settings.web_config_file)


def check_config(path: str, web_config_file: str | None = None) -> int:
    try:
        settings, web_config = _load(path, web_config_file)
    except ConfigError as exc:
        config_error(exc)
        return 1
    print(yaml.safe_dump(masked_dict(settings), sort_keys=False), end="")
    print("".join(f"# {line}\n" for line in cost_lines(settings)), end="")  # still YAML
    for note in notes(settings):
        print(f"note: {note}", file=sys.stderr)
    for warning in [*warnings(settings), *(web_config.warnings if web_config else ())]:
        print(f"warning: {warning}", file=sys.stderr)
    return 0


def run(path: str, web_config_file: str | None = None) -> int:
    try:
        settings, web_config = _load(path, web_config_file)
    except ConfigError as exc:
        config_error(exc)
        return 1
    redactor = configure_logging(
        settings.log.level, settings.log.format, Redactor(settings.secrets())
    )
    if web_config is not None:
        log = structlog.get_logger("exporter.cli")
        for warning in web_config.warnings:
            log.warning("web_config_unsupported", detail=warning)
        log.info(
            "web_config_loaded",
            file=web_config.path,
            tls=web_config.tls is not None,
            basic_auth_users=len(web_config.users),
        )
    from exporter.runtime.service import create_app
    from exporter.runtime.tuning import tune_for_serving

    async def app() -> web.Application:
        built = await create_app(settings, redactor=redactor, web_config=web_config)
        tune_for_serving()
        return built

    web.run_app(
        app(),
        host=settings.listen_host,
        port=settings.listen_port,
        ssl_context=web_config.tls if web_config else None,
        print=None,
        access_log=None,
        shutdown_timeout=3.0,
    )
    return 0


async def _serve(app: web.Application, host: str, port: int) -> tuple[web.AppRunner, int]:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    bound = int(runner.addresses[0][1])  # the real port when 0 was asked for
    return runner, bound


async def _wait_for_signal() -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()


def demo_settings(sim_url: str, token: str, listen: str, read: str, write: str) -> Settings:
    return parse_config(
        {
            "upstream": {"base_url": sim_url, "token": token},
            "accounts": [
                {"name": "demo-media", "dvr_streams": ["live/main", "news"]},
                {"name": "demo-shop", "dvr_streams": ["live/main", "news"]},
            ],
            "traffic": {"delay_seconds": 120, "revisit_minutes": 5},
            "restream": {"interval_seconds": 15, "history_interval_seconds": 60},
            "dvr": {"interval_seconds": 15},
            "talking_head": {"interval_seconds": 21600},
            "listen": listen,
            # No failed-authentication throttle: the demo is tried and fuzzed from one address.
            "admin": {
                "enabled": True,
                "read_token": read,
                "write_token": write,
                "auth_failures_per_minute": 0,
            },
        },
        env={},
    )


async def _demo(listen: str, sim_listen: str) -> int:
    from exporter.runtime.service import create_app
    from exporter.runtime.tuning import tune_for_serving
    from exporter.simulator import SimConfig, Simulator
    from exporter.support.clock import SystemClock

    sim = Simulator(SimConfig(), SystemClock())
    sim_host, sim_port = split_host_port(sim_listen, "--simulator-listen", allow_any=True)
    sim_runner, sim_bound = await _serve(sim.build_app(), sim_host, sim_port)
    read, write = secrets.token_urlsafe(12), secrets.token_urlsafe(16)
    settings = demo_settings(f"http://{sim_host}:{sim_bound}", sim.token, listen, read, write)
    redactor = configure_logging("info", "auto", Redactor(settings.secrets()))
    app = await create_app(settings, redactor=redactor)
    tune_for_serving()
    runner, bound = await _serve(app, settings.listen_host, settings.listen_port)
    base = f"http://{settings.listen_host}:{bound}"
    print(
        "\n".join(
            [
                "cdnvideo-exporter demo: the exporter against its built-in simulator",
                f"  landing page    {base}/",
                f"  metrics         {base}/metrics",
                f"  readiness       {base}/readyz",
                f"  admin API spec  {base}/api/v1/openapi.json",
                f"  simulator       http://{sim_host}:{sim_bound}/  (token {sim.token})",
                f"  admin tokens    read {read}  write {write}  (this run only)",
                f"  try: curl -H 'Authorization: Bearer {read}' "
                f"{base}/api/v1/restream/demo-media/status",
                "Press Ctrl-C to stop.",
            ]
        ),
        flush=True,
    )
    try:
        await _wait_for_signal()
    finally:
        await runner.cleanup()
        await sim_runner.cleanup()
    return 0


async def _simulate(args: argparse.Namespace) -> int:
    from exporter.simulator import Simulator, config_from_args
    from exporter.support.clock import SystemClock

    configure_logging("info", "auto")
    sim = Simulator(config_from_args(args), SystemClock())
    host, port = split_host_port(args.listen, "--listen", allow_any=True)
    runner, bound = await _serve(sim.build_app(), host, port)
    print(
        f"simulator listening on http://{host}:{bound}/ (accounts: {', '.join(sim.accounts)})",
        flush=True,
    )
    try:
        await _wait_for_signal()
    finally:
        await runner.cleanup()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    command: str = args.command
    try:
        if command == "check-config":
            return check_config(args.config, args.web_config_file)
        if command == "run":
            return run(args.config, args.web_config_file)
        if command == "demo":
            return asyncio.run(_demo(args.listen, args.simulator_listen))
        if command == "simulate":
            return asyncio.run(_simulate(args))
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 2
