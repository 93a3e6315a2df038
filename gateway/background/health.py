"""`StoreHealth`: whether a shared store (PostgreSQL) can be reached, as ``/healthz`` shows it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

__all__ = ["HealthReporting", "StoreHealth", "with_store"]


@dataclass(frozen=True)
class StoreHealth:
    """A store's reachability.

    Attributes:
        name: The store, fit for messages ("PostgreSQL at host:port/db (schema s)").
        up: Whether it answered at last use.
        detail: Why it cannot be reached, while it cannot.
    """

    name: str
    up: bool
    detail: str | None = None


@runtime_checkable
class HealthReporting(Protocol):
    """A store that knows whether it can be reached (the PostgreSQL pending store)."""

    def health(self) -> StoreHealth:
        """The store's reachability now."""
        ...


def with_store(health: dict[str, Any], store: object) -> dict[str, Any]:
    """``health`` (``/healthz``'s body) with the ``store`` section when ``store`` reports one:
    a store that cannot be reached makes the gateway ``degraded``."""
    if not isinstance(store, HealthReporting):
        return health
    found = store.health()
    section = {"status": "up" if found.up else "down", "name": found.name, "detail": found.detail}
    status = health["status"] if found.up else "degraded"
    return health | {"status": status, "store": section}
