"""``storage``: where shared state lives (SQLite, or PostgreSQL shared by replicas), and how
its ``dsn`` is read and shown (never with its password)."""

from __future__ import annotations

import os
import re
from typing import Final, Literal

from pydantic import Field

from gateway.config._strict import Strict

__all__ = ["OnOutage", "StorageConfig", "dsn_problem", "read_dsn", "redact_dsn"]

OnOutage = Literal["fail_closed", "serve_allowed"]
_SCHEMES: Final = ("postgresql://", "postgres://")
_PASSWORD: Final = re.compile(r"(://[^:/@]*:)[^@]*@")


class StorageConfig(Strict):
    """Where shared state lives: pending calls, grants, sessions and tool pins.

    ``sqlite`` is the embedded default (as ``approvals.store`` and ``approvals.path`` say);
    ``postgres`` moves all of it to one PostgreSQL schema that several replicas share.
    """

    backend: Literal["sqlite", "postgres"] = Field(
        "sqlite",
        description="sqlite: embedded (approvals.store/path); postgres: shared by replicas.",
    )
    dsn: str = Field(
        "postgresql://postgres@127.0.0.1:5432/postgres",
        description="postgres: a postgresql:// URL, or env:NAME holding one (keeps passwords "
        "out of the file); never logged.",
    )
    schema_name: str = Field(
        "lockgate",
        alias="schema",
        pattern=r"^[a-z_][a-z0-9_]{0,47}$",
        description="postgres: the schema holding lockgate's tables (created if missing).",
    )
    pool_size: int = Field(10, ge=2, le=200, description="postgres: connections per process.")
    connect_timeout: float = Field(5.0, gt=0, description="postgres: seconds to connect.")
    on_outage: OnOutage = Field(
        "fail_closed",
        description=(
            "While the database is unreachable: fail_closed refuses every call; "
            "serve_allowed keeps serving calls the policy allows (ask/defer still fail closed)."
        ),
    )


def redact_dsn(dsn: str) -> str:
    """``dsn`` with its password (in the URL or a ``password=`` option) replaced by ``***``."""
    hidden = _PASSWORD.sub(r"\1***@", dsn)
    return re.sub(r"(password=)[^&\s]*", r"\1***", hidden, flags=re.IGNORECASE)


def read_dsn(value: str) -> str:
    """``storage.dsn`` as the URL it holds (``env:NAME`` read from the environment).

    Raises:
        KeyError: the variable is not set (its name).
    """
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
        dsn = read_dsn(value)
    except KeyError as exc:
        return f"environment variable {exc.args[0]} is not set (it should hold the database URL)"
    if not dsn.startswith(_SCHEMES):
        return f"must be a postgresql:// URL or env:NAME, not {redact_dsn(dsn)!r}"
    return None
