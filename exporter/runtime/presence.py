"""Which discovered accounts stay served: one inventory reply that leaves an account out does
not release it; DISCOVERY_MISSES_TO_RELEASE consecutive replies do."""

from __future__ import annotations

from collections.abc import Callable, Iterable

# Consecutive discovery replies an account must be missing from before it is released.
DISCOVERY_MISSES_TO_RELEASE = 3


class Presence:
    """Counts, per served account, the consecutive discovery replies it was missing from."""

    def __init__(self, misses_to_release: int = DISCOVERY_MISSES_TO_RELEASE) -> None:
        self.misses_to_release = misses_to_release
        self._missed: dict[str, int] = {}

    def served(
        self, found: Iterable[str], serving: Iterable[str], owns: Callable[[str], bool]
    ) -> tuple[str, ...]:
        """The accounts to serve after a discovery reply: those ``found`` (and owned by this
        replica's shard), plus those served now that the reply left out fewer than
        ``misses_to_release`` times in a row. One that another replica owns goes at once."""
        found = set(found)
        keep = set(found)
        for name in serving:
            if name in found or not owns(name):
                self._missed.pop(name, None)
                continue
            missed = self._missed.get(name, 0) + 1
            if missed < self.misses_to_release:
                self._missed[name] = missed
                keep.add(name)
            else:
                self._missed.pop(name, None)
        for name in found:
            self._missed.pop(name, None)
        return tuple(sorted(keep))
