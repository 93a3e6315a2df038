"""`MemoryRateCounter`: the embedded `RateCounter`, GCRA in one process's memory.

GCRA (see `toolsets.rates`) keeps one float per key, the key's theoretical arrival time (TAT).
A key whose TAT has passed is as good as new, so it is dropped: memory holds only keys that
were hit within the last ``burst`` intervals of their rate. Expired keys are swept when the
number of keys doubled since the last sweep (amortised O(1) a call); past ``max_keys`` live
keys, the least recently hit are forgotten (a forgotten key starts afresh, so under that
pressure a caller may get one more burst), with a warning in the log. At most 1.25 times
``max_keys`` keys are ever held.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from typing import Final

from toolsets.rates import Rate, RateVerdict

__all__ = ["MAX_KEYS", "MemoryRateCounter", "gcra"]

log = logging.getLogger("lockgate.rate_limits")

MAX_KEYS: Final = 100_000
"""Live keys kept by default (a few MiB)."""
_FIRST_SWEEP: Final = 1024
_EPSILON: Final = 1e-9
"""Float slack, so a call exactly at the boundary is let through (``3/s``: 1/3 s steps)."""


def gcra(rate: Rate, tat: float | None, now: float) -> tuple[RateVerdict, float | None]:
    """One GCRA step: whether a call at ``now`` fits a key whose TAT is ``tat`` (None: a
    fresh key), and the key's new TAT (None: unchanged, the call was refused).

    The call fits when the new TAT, ``max(tat, now) + interval``, is at most ``burst``
    intervals ahead of ``now``; otherwise it fits ``retry_after`` seconds later.
    """
    interval = rate.interval
    after = max(now if tat is None else tat, now) + interval
    allowed_at = after - rate.burst * interval
    if now + _EPSILON < allowed_at:
        return RateVerdict(allowed=False, retry_after=allowed_at - now), None
    return RateVerdict(allowed=True), after


class MemoryRateCounter:
    """Implements `toolsets.rates.RateCounter` for one process (the embedded default).

    Args:
        max_keys: Live keys kept at most (see the module docstring).
    """

    def __init__(self, *, max_keys: int = MAX_KEYS) -> None:
        self.max_keys = max_keys
        self._tats: OrderedDict[str, float] = OrderedDict()
        self._first = min(_FIRST_SWEEP, max_keys)
        self._sweep_at = self._first

    def __len__(self) -> int:
        """Keys held (live, or expired and not swept yet)."""
        return len(self._tats)

    async def hit(self, key: str, rate: Rate, now: float) -> RateVerdict:
        """Count one call under ``key`` at ``now`` if ``rate`` lets it through."""
        verdict, tat = gcra(rate, self._tats.get(key), now)
        if tat is not None:
            self._tats[key] = tat
            self._tats.move_to_end(key)
            if len(self._tats) >= self._sweep_at:
                self._sweep(now)
        return verdict

    def _sweep(self, now: float) -> None:
        """Drop the keys whose TAT has passed; then, past ``max_keys``, the least recent."""
        expired = [key for key, tat in self._tats.items() if tat <= now]
        for key in expired:
            del self._tats[key]
        over = len(self._tats) - self.max_keys
        if over > 0:
            log.warning(
                "rate limits: %d live counters over max_keys %d; forgetting the %d least "
                "recently hit (they start afresh)",
                len(self._tats),
                self.max_keys,
                over,
            )
            for _ in range(over):
                self._tats.popitem(last=False)
        ceiling = self.max_keys + self.max_keys // 4
        self._sweep_at = max(self._first, min(2 * len(self._tats), ceiling))
