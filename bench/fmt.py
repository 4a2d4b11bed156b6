"""How the benchmark's tables write a figure: a number ("n/a" for NaN) and a size in bytes."""

from __future__ import annotations

import math


def number(value: float, digits: int = 1) -> str:
    return "n/a" if math.isnan(value) else f"{value:.{digits}f}"


def size(n: float) -> str:
    if n >= 1 << 20:
        return f"{n / (1 << 20):.1f}M"
    if n >= 1 << 10:
        return f"{n / (1 << 10):.0f}k"
    return f"{n:.0f}"
