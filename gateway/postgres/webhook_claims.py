"""`WebhookClaims`: each event is delivered to each webhook by one replica only.

Every replica reads every replica's events (`gateway.postgres.event_log.EventLog.feed`); before
delivering one, a replica inserts its claim ``(event id, webhook)``; the replica whose insert
wins delivers, the others skip it. A claim is kept a day (then the event is long out of any
replay window).
"""

from __future__ import annotations

import hashlib
import logging
from typing import Final

from gateway.background.resilient import until_done
from gateway.events.model import Event
from gateway.postgres.database import Conn, Database

__all__ = ["WebhookClaims", "webhook_key"]

log = logging.getLogger("lockgate.postgres")

_TRIM_EVERY: Final = 1000


def webhook_key(url: str) -> str:
    """A webhook's name in the claims table (a digest: a URL may carry a token)."""
    return hashlib.sha256(url.encode()).hexdigest()[:32]


class WebhookClaims:
    """Claims deliveries for one replica.

    Args:
        database: The shared database.
        replica: This replica's name, recorded on its claims.
    """

    def __init__(self, database: Database, replica: str) -> None:
        self._database, self._replica = database, replica
        self._claimed = 0

    async def __call__(self, event: Event, url: str) -> bool:
        """True when this replica won ``event`` for the webhook at ``url`` (it delivers it).

        While the database cannot be reached, waits for it (the delivery queue holds the
        events meanwhile): a claim is never guessed.
        """
        key = webhook_key(url)

        async def claim() -> bool:
            return await self._database.run(lambda conn: self._claim(conn, event.id, key))

        won = await until_done(claim, what=f"webhook claim for event {event.id}", logger=log)
        self._claimed += 1
        if self._claimed % _TRIM_EVERY == 0:
            await until_done(
                lambda: self._database.run(_trim), what="webhook claims: trim", logger=log
            )
        return won

    async def _claim(self, conn: Conn, event_id: str, key: str) -> bool:
        # Tried again after a lost connection, an earlier insert of ours may have committed.
        owner = await conn.fetchval(
            "WITH claimed AS (INSERT INTO webhook_claims (event_id, webhook, replica) "
            "VALUES ($1, $2, $3) ON CONFLICT DO NOTHING RETURNING replica) "
            "SELECT replica FROM claimed UNION ALL "
            "SELECT replica FROM webhook_claims WHERE event_id = $1 AND webhook = $2 LIMIT 1",
            event_id,
            key,
            self._replica,
        )
        return bool(owner == self._replica)


async def _trim(conn: Conn) -> None:
    await conn.execute("DELETE FROM webhook_claims WHERE claimed_at < now() - interval '1 day'")
