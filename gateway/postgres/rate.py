"""`PostgresRateCounter`: rate-limit counters shared by every replica, one row per key.

GCRA (see `toolsets.rates`) keeps one TAT per key, so one statement does a whole hit: the
``INSERT ... ON CONFLICT DO UPDATE`` takes the row lock, moves the TAT only when the call fits,
and returns whether it fitted and the TAT (the new one, or the one the call was refused on, for
the wait it is told). Concurrent hits on one key are serialised by that row lock, so replicas
together never let more calls through than the rate. Rows whose TAT has passed hold nothing:
each replica deletes them at most once a `SWEEP_INTERVAL`.

The table is ``UNLOGGED``: a hit costs one round trip, not a WAL flush; the counters survive a
clean restart of the PostgreSQL server but not a crash of it (every limit then starts afresh),
and are not on its standbys. Times are seconds since the epoch from each replica's clock
(`RateLimitedToolset`'s), so the replicas' clocks should agree (NTP); a skew of S seconds
shifts a limit by at most S.

While the database cannot be reached (`StoreUnavailable`), ``on_outage: fail_closed`` refuses
the call with that error; ``serve_allowed`` counts in this replica's memory instead (each
replica then enforces the limit alone) until the database answers again.
"""

from __future__ import annotations

import logging
from typing import Final

from gateway.config.storage import OnOutage
from gateway.memory.rate_counter import MemoryRateCounter
from gateway.postgres.database import Conn, Database
from toolsets.errors import StoreUnavailable
from toolsets.rates import Rate, RateVerdict

__all__ = ["SWEEP_INTERVAL", "PostgresRateCounter"]

log = logging.getLogger("lockgate.rate_limits")

SWEEP_INTERVAL: Final = 60.0
"""Seconds between one replica's deletions of expired counters."""

# $1 key, $2 now, $3 interval, $4 burst * interval. A new key's first call always fits (burst
# >= 1). Every SET expression reads the row as it was (under its lock); a refused hit writes
# the TAT back unchanged, so the row returned is the one the call was judged on.
_HIT: Final = """
INSERT INTO rate_counters AS c (key, tat, fit) VALUES ($1::text, $2::float8 + $3::float8, true)
ON CONFLICT (key) DO UPDATE SET
    fit = greatest(c.tat, $2) + $3 - $4::float8 <= $2 + 1e-9,
    tat = CASE WHEN greatest(c.tat, $2) + $3 - $4 <= $2 + 1e-9
        THEN greatest(c.tat, $2) + $3 ELSE c.tat END
RETURNING fit, tat
"""
_SWEEP: Final = "DELETE FROM rate_counters WHERE tat <= $1"


class PostgresRateCounter:
    """Implements `toolsets.rates.RateCounter` on the shared schema (table ``rate_counters``).

    Args:
        database: The shared database; closed by the pending store that shares it.
        on_outage: What a hit does while the database is unreachable (module docstring).
    """

    def __init__(self, database: Database, *, on_outage: OnOutage = "fail_closed") -> None:
        self.database = database
        self.on_outage = on_outage
        self._local = MemoryRateCounter()
        self._swept_at = float("-inf")
        self._outage = False

    async def hit(self, key: str, rate: Rate, now: float) -> RateVerdict:
        """Count one call under ``key`` at ``now`` if ``rate`` lets it through.

        Raises:
            StoreUnavailable: The database is unreachable and ``on_outage`` is ``fail_closed``.
        """
        interval = rate.interval

        async def work(conn: Conn) -> RateVerdict:
            if now - self._swept_at >= SWEEP_INTERVAL:
                self._swept_at = now
                await conn.execute(_SWEEP, now)
            row = await conn.fetchrow(_HIT, key, now, interval, rate.burst * interval)
            assert row is not None  # an upsert with RETURNING always returns its row
            fit, tat = row
            if fit:
                return RateVerdict(allowed=True)
            return RateVerdict(allowed=False, retry_after=tat + interval * (1 - rate.burst) - now)

        try:
            verdict = await self.database.run(work)
        except StoreUnavailable as exc:
            if self.on_outage == "fail_closed":
                raise
            if not self._outage:
                log.warning(
                    "%s: rate limits are counted in this replica alone until it answers", exc
                )
            self._outage = True
            return await self._local.hit(key, rate, now)
        self._outage = False
        return verdict
