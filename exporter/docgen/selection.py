"""check-config's warnings about ``metrics.include`` / ``metrics.exclude``, checked against the
catalogue of families (the one list of them), so the config layer need not know the areas."""

from __future__ import annotations

import re

from exporter.config import Settings
from exporter.docgen.catalogue import entries


def family_selection_warnings(settings: Settings) -> list[str]:
    """What ``metrics.include`` / ``metrics.exclude`` would do that the user may not mean: a
    pattern that matches no family (a typo), and health families it cannot take away."""
    families = entries()
    health = [e.name for e in families if e.area == "exporter"]
    m = settings.metrics
    out = []
    for key, patterns in (("include", m.include), ("exclude", m.exclude)):
        for i, pattern in enumerate(patterns):
            regex = re.compile(pattern)
            if not any(regex.search(e.name) for e in families):
                out.append(f"metrics.{key}[{i}]: {pattern!r} matches no metric family")
    for i, pattern in enumerate(m.exclude):
        hit = [name for name in health if re.search(pattern, name)]
        if hit:
            out.append(
                f"metrics.exclude[{i}]: {pattern!r} matches health families, which are always "
                f"exported: {', '.join(hit)}"
            )
    if m.include:
        missed = [name for name in health if not any(re.search(p, name) for p in m.include)]
        if missed:
            out.append(
                "metrics.include: health families are always exported, also those it does "
                f"not match: {', '.join(missed)}"
            )
    return out
