"""Which metric families are exported: ``metrics.include`` / ``metrics.exclude`` over names.

A family is exported when ``include`` is empty or one of its patterns matches the family name,
and no ``exclude`` pattern matches it. Patterns are Python regular expressions matched with
``re.search``, as fastly-exporter's ``-metric-allowlist``/``-metric-blocklist`` match: a
pattern matches anywhere in the name, so anchor it (``^cdnvideo_resource_.*_per_second$``) to
mean a whole name. The selection applies to the families of the polled areas; the exporter's
own health families (``cdnvideo_up``, build info and the other self-metrics) are always
exported.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from exporter.exposition.model import FragmentBuilder


class FamilySelection:
    """The compiled patterns, with each family's answer remembered (the names are few)."""

    __slots__ = ("_answers", "_exclude", "_include")

    def __init__(self, include: Sequence[str] = (), exclude: Sequence[str] = ()) -> None:
        self._include = tuple(re.compile(p) for p in include)
        self._exclude = tuple(re.compile(p) for p in exclude)
        self._answers: dict[str, bool] = {}

    @property
    def everything(self) -> bool:
        """True when nothing is left out (the default): callers skip filtering altogether."""
        return not self._include and not self._exclude

    def wants(self, name: str) -> bool:
        answer = self._answers.get(name)
        if answer is None:
            answer = (not self._include or any(p.search(name) for p in self._include)) and not any(
                p.search(name) for p in self._exclude
            )
            self._answers[name] = answer
        return answer

    def builder(self) -> FragmentBuilder:
        """A builder that makes no sample of the families left out."""
        return FragmentBuilder(None if self.everything else self.wants)


EVERYTHING = FamilySelection()
