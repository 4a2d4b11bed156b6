"""Command line: run, demo, simulate, check-config, audit: the arguments parsed and the
command dispatched. What the daemon and the demo are built of is wired in one place, the
composition root (exporter.web.daemon)."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence
from datetime import date
from typing import Any

import yaml

from exporter.config import (
    ConfigError,
    masked_dict,
    notes,
    split_host_port,
    warnings,
)
from exporter.config.flags import LOG_FORMATS, LOG_LEVELS, Flags, load_settings
from exporter.config.loader import read_document, switch_areas, unset_needed
from exporter.runtime.registry import declarations, settings_sections
from exporter.support.buildinfo import build_info
from exporter.support.logs import Redactor, configure_logging
from exporter.web.daemon import load, run_daemon, run_demo, serve_plain
from exporter.web.serving import wait_for_stop

DEMO_LISTEN = "127.0.0.1:9877"
DEMO_SIMULATOR_LISTEN = "127.0.0.1:0"


class _Version(argparse.Action):
    """``--version`` as the Prometheus tools print it: version, branch and revision (asked of
    git only when the flag is given), and the runtime."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        build = build_info()
        print(
            f"{parser.prog}, version {build.version} (branch: {build.branch}, "
            f"revision: {build.revision})\n  python version: {build.pythonversion}"
        )
        parser.exit()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cdnvideo-exporter",
        description="Prometheus exporter and admin gateway for the CDNvideo streaming platform.",
    )
    parser.add_argument("--version", action=_Version, help="show the version and the build")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = sub.add_parser("run", help="run the exporter daemon", description="Run the daemon.")
    _config_flags(run)

    demo = sub.add_parser(
        "demo",
        help="the exporter against its built-in simulator (no config, no network)",
        description="Start the platform simulator and the exporter against it, print the URLs.",
    )
    demo.add_argument(
        "--web.listen-address",
        "--listen",
        dest="listen",
        default=DEMO_LISTEN,
        metavar="HOST:PORT",
        help="the exporter's address (default: %(default)s)",
    )
    demo.add_argument(
        "--simulator.listen-address",
        "--simulator-listen",
        dest="simulator_listen",
        default=DEMO_SIMULATOR_LISTEN,
        metavar="HOST:PORT",
        help="the simulator's address; port 0 picks a free port (default: %(default)s)",
    )

    check = sub.add_parser(
        "check-config",
        help="validate a config file and print it with secrets masked",
        description="Validate a config; print the effective config with every secret masked.",
    )
    _config_flags(check)
    check.add_argument(
        "--verbose", action="store_true", help="also print notes (what the settle reads cost)"
    )

    audit = sub.add_parser(
        "audit",
        help="re-read one day of an account from the platform and compare with what was counted",
        description="Re-read the settled traffic windows of one account and day (UTC) from the "
        "platform and print, per counted family, counted vs platform and the difference; exit "
        "1 when they differ.",
    )
    audit.add_argument("--config.file", dest="config_file", metavar="FILE", required=True)
    audit.add_argument("--account", required=True, metavar="A")
    audit.add_argument("--day", required=True, metavar="YYYY-MM-DD", type=date.fromisoformat)

    sim = sub.add_parser(
        "simulate",
        help="run the platform simulator alone",
        description="Serve the built-in simulator of the platform API (demo data, faults).",
    )
    sim.add_argument("--listen", default="127.0.0.1:8080", metavar="HOST:PORT")
    from exporter.simulator import add_cli_arguments

    add_cli_arguments(sim)
    return parser


def _config_flags(cmd: argparse.ArgumentParser) -> None:
    """The flags ``run`` and ``check-config`` share; each overrides the key it names."""
    where = cmd.add_mutually_exclusive_group(required=True)
    where.add_argument("--config.file", dest="config_file", metavar="FILE", help="YAML config")
    where.add_argument("--config", dest="config_file", metavar="FILE", help=argparse.SUPPRESS)
    cmd.add_argument(
        "--web.config.file",
        dest="web_config_file",
        metavar="FILE",
        help="exporter-toolkit web config (TLS, basic auth); overrides web_config_file",
    )
    cmd.add_argument(
        "--web.listen-address",
        dest="listen_address",
        metavar="HOST:PORT",
        help="address of /metrics, the landing page and the admin API; overrides listen",
    )
    cmd.add_argument(
        "--web.telemetry-path",
        dest="telemetry_path",
        default="/metrics",
        metavar="PATH",
        help="path of the metrics (default /metrics)",
    )
    cmd.add_argument(
        "--log.level", dest="log_level", choices=LOG_LEVELS, help="overrides log.level"
    )
    cmd.add_argument(
        "--log.format", dest="log_format", choices=LOG_FORMATS, help="overrides log.format"
    )
    cmd.add_argument(
        "--web.enable-lifecycle",
        dest="enable_lifecycle",
        action="store_true",
        help="enable POST /-/reload (with admin on, it takes the write token); SIGHUP always "
        "reloads",
    )
    for area in declarations():  # as node_exporter's collector flags; the last one given wins
        for prefix, on, verb in (("", True, "poll"), ("no-", False, "do not poll")):
            cmd.add_argument(
                f"--{prefix}collector.{area.name}",
                dest=f"collector_{area.name}",
                action="store_const",
                const=on,
                help=f"{verb} the {area.title} area; overrides {area.name}.enabled",
            )


def _flags(args: argparse.Namespace) -> Flags:
    return Flags(
        config_file=args.config_file,
        web_config_file=args.web_config_file,
        listen_address=args.listen_address,
        telemetry_path=args.telemetry_path,
        enable_lifecycle=args.enable_lifecycle,
        log_level=args.log_level,
        log_format=args.log_format,
        collectors=tuple(
            (area.name, on)
            for area in declarations()
            if (on := getattr(args, f"collector_{area.name}")) is not None
        ),
    )


def config_error(exc: ConfigError) -> None:
    """One line on stderr per problem; URL credentials and ``key: value`` secrets in it are
    masked (the loader already keeps secret keys' values out, this catches secrets quoted
    elsewhere)."""
    redactor = Redactor()
    for problem in exc.problems:
        text = redactor.text(problem).replace("\n", " ")
        print(f"config error: {text}", file=sys.stderr)


def check_config(flags: Flags, verbose: bool = False) -> int:
    from exporter.docgen.selection import family_selection_warnings  # every area's families
    from exporter.runtime.cost import cost_lines

    try:
        settings, web_config = load(flags)
    except ConfigError as exc:
        config_error(exc)
        return 1
    print(yaml.safe_dump(masked_dict(settings), sort_keys=False), end="")
    if flags.overridden():
        print(f"# set by flags: {', '.join(flags.overridden())}")
    print(f"# metrics path: {flags.telemetry_path}")
    print("".join(f"# {line}\n" for line in cost_lines(settings)), end="")  # still YAML
    if verbose:
        for note in notes(settings):
            print(f"note: {note}", file=sys.stderr)
    document = switch_areas(read_document(flags.config_file)[0], dict(flags.collectors))
    unset = unset_needed(document, os.environ, settings_sections())
    web = web_config.warnings if web_config else ()
    for warning in [*unset, *warnings(settings), *family_selection_warnings(settings), *web]:
        print(f"warning: {warning}", file=sys.stderr)
    return 0


def run(flags: Flags) -> int:
    try:
        settings, web_config = load(flags, create=True)
    except ConfigError as exc:
        config_error(exc)
        return 1
    return run_daemon(settings, web_config, flags)


async def _simulate(args: argparse.Namespace) -> int:
    from exporter.simulator import Simulator, config_from_args
    from exporter.support.clock import SystemClock

    configure_logging("info", "auto")
    sim = Simulator(config_from_args(args), SystemClock())
    host, port = split_host_port(args.listen, "--listen", allow_any=True)
    runner, bound = await serve_plain(sim.build_app(), host, port)
    print(
        f"simulator listening on http://{host}:{bound}/ (accounts: {', '.join(sim.accounts)})",
        flush=True,
    )
    try:
        await wait_for_stop()
    finally:
        await runner.cleanup()
    return 0


def _audit(config_file: str, account: str, day: date) -> int:
    from exporter.traffic.prove import load_book, prove_day

    try:
        settings = load_settings(Flags(config_file=config_file), settings_sections())
    except ConfigError as exc:
        config_error(exc)
        return 2
    book = load_book(settings, sys.stderr)
    if book is None:
        return 2
    configure_logging("warn", "auto", Redactor(settings.secrets()))
    return asyncio.run(prove_day(settings, book, account, day, sys.stdout, sys.stderr))


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    command: str = args.command
    try:
        if command == "check-config":
            return check_config(_flags(args), args.verbose)
        if command == "run":
            return run(_flags(args))
        if command == "demo":
            return asyncio.run(run_demo(args.listen, args.simulator_listen))
        if command == "simulate":
            return asyncio.run(_simulate(args))
        if command == "audit":
            return _audit(args.config_file, args.account, args.day)
    except ConfigError as exc:
        for problem in exc.problems:
            print(f"error: {problem}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 2
