"""Where the gateway's shared state lives, and its schema version: read without changing
anything (`storage_status`) or brought up to date (`migrate_storage`). Used by ``lockgate db``
and ``lockgate doctor``; the gateway itself migrates when it starts."""

from __future__ import annotations

import contextlib
import sqlite3
from dataclasses import dataclass

from gateway.config.model import GatewayConfig
from gateway.postgres.settings import PostgresSettings
from gateway.sqlite.schema import SCHEMA_VERSION as SQLITE_VERSION
from gateway.sqlite.schema import open_database
from toolsets.errors import LockgateError

__all__ = ["StorageStatus", "migrate_storage", "storage_status"]


@dataclass(frozen=True, slots=True, kw_only=True)
class StorageStatus:
    """The store and its schema version.

    Attributes:
        where: The store, fit for printing (never a password).
        current: Its schema version (0: nothing created yet).
        latest: The version this lockgate migrates to.
    """

    where: str
    current: int
    latest: int

    def summary(self) -> str:
        """One line: the store, its version, and what to do about it."""
        if self.current > self.latest:
            return (
                f"{self.where}: schema version {self.current} is newer than this lockgate "
                f"(knows up to {self.latest}): upgrade lockgate"
            )
        if self.current < self.latest:
            return (
                f"{self.where}: schema version {self.current}, {self.latest} expected: "
                "run lockgate db migrate (the gateway also migrates when it starts)"
            )
        return f"{self.where}: schema version {self.current} (up to date)"


def _sqlite_where(config: GatewayConfig) -> str:
    kind = "in memory" if config.approvals.store == "memory" else "SQLite"
    return f"{kind} at {config.resolve(config.approvals.path)}"


async def storage_status(config: GatewayConfig) -> StorageStatus:
    """The schema version of the configured store, changing nothing.

    Raises:
        StoreUnavailable: PostgreSQL cannot be reached.
        LockgateError: the SQLite file cannot be read.
    """
    if config.storage.backend == "postgres":
        from gateway.postgres.database import Database
        from gateway.postgres.migrations import SCHEMA_VERSION, schema_status

        settings = PostgresSettings.from_config(config)
        conn = await Database(settings).connect()
        try:
            status = await schema_status(conn, settings.schema)
        finally:
            await conn.close()
        return StorageStatus(where=settings.where, current=status.current, latest=SCHEMA_VERSION)
    where = _sqlite_where(config)
    if config.approvals.store == "memory":
        return StorageStatus(where=where, current=SQLITE_VERSION, latest=SQLITE_VERSION)
    path = config.resolve(config.approvals.path)
    if not path.exists():
        return StorageStatus(where=where, current=0, latest=SQLITE_VERSION)
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as file:
            current = int(file.execute("PRAGMA user_version").fetchone()[0])
    except sqlite3.DatabaseError as exc:
        raise LockgateError(f"{where} cannot be read ({exc}): fix approvals.path") from None
    return StorageStatus(where=where, current=current, latest=SQLITE_VERSION)


async def migrate_storage(config: GatewayConfig) -> tuple[StorageStatus, int]:
    """Bring the configured store's schema up to date; its status after, and the version
    before (as found under the migration lock: of two at once, one migrates).

    Raises:
        StoreUnavailable: PostgreSQL cannot be reached.
        PendingStoreError: the schema is newer than this lockgate.
    """
    if config.storage.backend == "postgres":
        from gateway.postgres.database import Database

        before, _ = await Database(PostgresSettings.from_config(config)).migrate()
    else:
        before = (await storage_status(config)).current
        if config.approvals.store != "memory":
            path = config.resolve(config.approvals.path)
            path.parent.mkdir(parents=True, exist_ok=True)
            open_database(str(path)).close()
    return await storage_status(config), before
