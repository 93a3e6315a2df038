"""`PostgresSettings`: the ``storage`` section resolved (``env:NAME`` read), with a printable
form of the server that never shows a password."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal
from urllib.parse import urlsplit

from toolsets.errors import ConfigError, ConfigIssue

if TYPE_CHECKING:
    from gateway.config.model import GatewayConfig

__all__ = ["OnOutage", "PostgresSettings", "dsn_problem", "redact_dsn"]

OnOutage = Literal["fail_closed", "serve_allowed"]
_SCHEMES: Final = ("postgresql://", "postgres://")
_PASSWORD: Final = re.compile(r"(://[^:/@]*:)[^@]*@")


def redact_dsn(dsn: str) -> str:
    """``dsn`` with its password (in the URL or a ``password=`` option) replaced by ``***``."""
    hidden = _PASSWORD.sub(r"\1***@", dsn)
    return re.sub(r"(password=)[^&\s]*", r"\1***", hidden, flags=re.IGNORECASE)


def _read(value: str) -> str:
    if not value.startswith("env:"):
        return value
    name = value.removeprefix("env:")
    found = os.environ.get(name)
    if not found:
        raise KeyError(name)
    return found


def dsn_problem(value: str) -> str | None:
    """Why ``storage.dsn`` (a URL or ``env:NAME``) cannot be used; None when it can."""
    try:
        dsn = _read(value)
    except KeyError as exc:
        return f"environment variable {exc.args[0]} is not set (it should hold the database URL)"
    if not dsn.startswith(_SCHEMES):
        return f"must be a postgresql:// URL or env:NAME, not {redact_dsn(dsn)!r}"
    return None


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
            dsn=_read(storage.dsn),
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
