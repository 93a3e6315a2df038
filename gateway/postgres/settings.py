"""`PostgresSettings`: the ``storage`` section (`gateway.config.storage`) resolved (``env:NAME``
read), with a printable form of the server that never shows a password."""

from __future__ import annotations

import os
from dataclasses import dataclass
from urllib.parse import urlsplit

from gateway.config.model import GatewayConfig
from gateway.config.storage import OnOutage, dsn_problem, read_dsn
from toolsets.errors import ConfigError, ConfigIssue

__all__ = ["PostgresSettings"]


@dataclass(frozen=True, slots=True, kw_only=True)
class PostgresSettings:
    """How to reach the shared database.

    Attributes:
        dsn: The ``postgresql://`` URL (may hold a password: never print it; see `where`).
        schema: The schema holding lockgate's tables.
        pool_size: Most connections one process opens (one more is kept for notifications).
        connect_timeout: Seconds to connect.
        on_outage: What calls do while the database cannot be reached.
    """

    dsn: str
    schema: str = "lockgate"
    pool_size: int = 10
    connect_timeout: float = 5.0
    on_outage: OnOutage = "fail_closed"

    @classmethod
    def from_config(cls, config: GatewayConfig) -> PostgresSettings:
        """The settings of ``config.storage``.

        Raises:
            ConfigError: ``storage.dsn`` cannot be used (an unset variable, not a URL).
        """
        storage = config.storage
        if (problem := dsn_problem(storage.dsn)) is not None:
            raise ConfigError([ConfigIssue("", None, None, "storage.dsn", problem)])
        return cls(
            dsn=read_dsn(storage.dsn),
            schema=storage.schema_name,
            pool_size=storage.pool_size,
            connect_timeout=storage.connect_timeout,
            on_outage=storage.on_outage,
        )

    @property
    def where(self) -> str:
        """``host:port/database`` (schema ``name``): the server, fit for messages and logs."""
        parts = urlsplit(self.dsn)
        host = parts.hostname or os.environ.get("PGHOST", "localhost")
        port = parts.port or int(os.environ.get("PGPORT", "5432"))
        database = parts.path.lstrip("/") or parts.username or "postgres"
        return f"PostgreSQL at {host}:{port}/{database} (schema {self.schema})"

    @property
    def channel(self) -> str:
        """The ``LISTEN``/``NOTIFY`` channel on which pending-call changes are announced."""
        return f"{self.schema}_pending"
