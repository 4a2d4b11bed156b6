"""``python -m tests.golden [--update]``: compare (or rewrite) tests/golden/exposition.prom."""

from __future__ import annotations

import argparse
import difflib
import sys

from tests.golden.golden import GOLDEN, current


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.golden", description=__doc__)
    parser.add_argument("--update", action="store_true", help="rewrite the golden file")
    args = parser.parse_args()
    text = current()
    if args.update:
        GOLDEN.write_text(text, encoding="utf-8")
        print(f"wrote {GOLDEN} ({len(text.splitlines())} lines)")
        return 0
    old = GOLDEN.read_text(encoding="utf-8") if GOLDEN.exists() else ""
    diff = list(difflib.unified_diff(old.splitlines(), text.splitlines(), "golden", "now", n=0))
    print("\n".join(diff) if diff else "the exposition matches the golden file")
    return 1 if diff else 0


if __name__ == "__main__":
    sys.exit(main())
