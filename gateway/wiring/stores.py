"""The gateway's stores, chosen by the config: in memory, one SQLite file, or PostgreSQL.

Pins, grants, tasks and session state live beside the pending calls: in memory, the same SQLite
file (``approvals.path``), or, when ``storage.backend`` is ``postgres``, the one shared database.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gateway.approvals.grant_store import GrantStore
from gateway.approvals.store import PendingListener, PendingStore
from gateway.config.model import GatewayConfig
from gateway.memory.grants import MemoryGrantStore
from gateway.memory.pending import MemoryPendingStore
from gateway.memory.pins import MemoryPinStore
from gateway.memory.rate_counter import MemoryRateCounter
from gateway.memory.sessions import MemorySessionStore
from gateway.pins import PinStore
from gateway.sessions.book import SessionBook
from gateway.sqlite.grants import SQLiteGrantStore
from gateway.sqlite.pending import SQLitePendingStore
from gateway.sqlite.pins import SQLitePinStore
from gateway.sqlite.sessions import SQLiteSessionStore
from gateway.sqlite.tasks import SQLiteTaskStore
from gateway.tasks.store import MemoryTaskStore, TaskStore
from gateway.wiring.events import folder_for
from gateway.wiring.scripts import has_scripts
from policies import PolicyHolder
from toolsets.errors import ConfigError, ConfigIssue
from toolsets.rates import RateCounter

if TYPE_CHECKING:
    from gateway.postgres.backend import PostgresBackend

__all__ = [
    "grant_store",
    "pending_store",
    "pin_store",
    "rate_counter",
    "session_book",
    "shared_backend",
    "task_store",
]


def shared_backend(config: GatewayConfig) -> PostgresBackend | None:
    """The PostgreSQL backend when ``storage.backend`` selects it: every shared store on it."""
    if config.storage.backend != "postgres":
        return None
    try:
        from gateway.postgres.backend import PostgresBackend
    except ImportError as exc:
        issue = ConfigIssue("", None, None, "storage.backend", f"postgres needs {exc.name!r}")
        raise ConfigError([issue]) from None  # install with: pip install 'lockgate[postgres]'
    return PostgresBackend.from_config(config)


def pending_store(
    config: GatewayConfig, listener: PendingListener, shared: PostgresBackend | None
) -> PendingStore:
    """The pending-call store, telling ``listener`` of every record it writes."""
    if shared is not None:
        return shared.pending_store(listener)
    if config.approvals.store == "memory":
        return MemoryPendingStore(listener=listener)
    path = config.resolve(config.approvals.path)
    folder_for(path, "approvals.path")
    return SQLitePendingStore(path, listener=listener)


def pin_store(config: GatewayConfig, shared: PostgresBackend | None) -> PinStore:
    """The durable tool pins."""
    if shared is not None:
        return shared.pin_store()
    if config.approvals.store == "memory":
        return MemoryPinStore()
    return SQLitePinStore(config.resolve(config.approvals.path))


def grant_store(config: GatewayConfig, shared: PostgresBackend | None) -> GrantStore:
    """The approval grants."""
    if shared is not None:
        return shared.grant_store()
    if config.approvals.store == "memory":
        return MemoryGrantStore()
    return SQLiteGrantStore(config.resolve(config.approvals.path))


def session_book(
    config: GatewayConfig, shared: PostgresBackend | None, policy: PolicyHolder
) -> SessionBook:
    """Each downstream session's state (on PostgreSQL, read and written through while decisions
    read it, for replicas)."""
    if shared is not None:
        scripted = has_scripts(config)
        return shared.session_book(lambda: scripted or policy.current.uses_session)
    if config.approvals.store == "memory":
        return SessionBook(MemorySessionStore())
    return SessionBook(SQLiteSessionStore(config.resolve(config.approvals.path)))


def task_store(config: GatewayConfig, shared: PostgresBackend | None) -> TaskStore:
    """The gateway's MCP tasks (shared by the replicas on PostgreSQL)."""
    if shared is not None:
        return shared.task_store()
    if config.approvals.store == "memory":
        return MemoryTaskStore()
    return SQLiteTaskStore(config.resolve(config.approvals.path))


def rate_counter(shared: PostgresBackend | None) -> RateCounter:
    """Rate-limit counters: shared by the replicas on PostgreSQL, else in this process."""
    return shared.rate_counter() if shared is not None else MemoryRateCounter()
