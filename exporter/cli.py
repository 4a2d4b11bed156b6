"""Command line: run, demo, simulate, check-config."""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    print("cdnvideo-exporter: not wired yet", args, file=sys.stderr)
    return 2
