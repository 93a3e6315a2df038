"""`PostgresBackend`: every shared store of one gateway process on one `Database`.

`gateway.wiring.compose` builds the stores from here when ``storage.backend`` is ``postgres``; the
pending store owns the pool (it opens it when the gateway starts and closes it last).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from gateway.approvals.store import PendingListener
from gateway.postgres.database import Database
from gateway.postgres.grants import PostgresGrantStore
from gateway.postgres.pending import PostgresPendingStore
from gateway.postgres.pins import PostgresPinStore
from gateway.postgres.rate import PostgresRateCounter
from gateway.postgres.session_book import SharedSessionBook
from gateway.postgres.sessions import PostgresSessionStore
from gateway.postgres.settings import PostgresSettings
from gateway.postgres.tasks import PostgresTaskStore

if TYPE_CHECKING:
    from gateway.config.model import GatewayConfig

__all__ = ["PostgresBackend"]


class PostgresBackend:
    """Builds the stores of one process, sharing one pool.

    Args:
        settings: How to reach the database.
    """

    def __init__(self, settings: PostgresSettings) -> None:
        self.settings = settings
        self.database = Database(settings)

    @classmethod
    def from_config(cls, config: GatewayConfig) -> PostgresBackend:
        """The backend of ``config.storage``.

        Raises:
            ConfigError: ``storage.dsn`` cannot be used.
        """
        return cls(PostgresSettings.from_config(config))

    def pending_store(self, listener: PendingListener | None = None) -> PostgresPendingStore:
        """The pending-call store (it owns the pool)."""
        return PostgresPendingStore(self.database, listener=listener)

    def grant_store(self) -> PostgresGrantStore:
        """The grant store."""
        return PostgresGrantStore(self.database)

    def pin_store(self) -> PostgresPinStore:
        """The tool-pin store."""
        return PostgresPinStore(self.database)

    def task_store(self) -> PostgresTaskStore:
        """The store of the gateway's MCP tasks."""
        return PostgresTaskStore(self.database)

    def rate_counter(self) -> PostgresRateCounter:
        """The rate-limit counters, shared by the replicas."""
        return PostgresRateCounter(self.database, on_outage=self.settings.on_outage)

    def session_book(self, read_through: Callable[[], bool] = lambda: True) -> SharedSessionBook:
        """The session book, read and written through to the database while
        ``read_through()`` (decisions read session state), else written behind."""
        store = PostgresSessionStore(self.database)
        return SharedSessionBook(
            store, on_outage=self.settings.on_outage, read_through=read_through
        )
