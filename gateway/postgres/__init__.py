"""Shared state on PostgreSQL, for several gateway replicas: pending calls, grants, sessions
and tool pins in one schema, versioned migrations, and ``LISTEN``/``NOTIFY`` wake-ups.

Selected with ``storage: {backend: postgres}``. Only `gateway.postgres.settings` is imported
here: the rest needs the ``postgres`` extra (asyncpg) and is imported where it is used.

Modules: ``settings`` (the config section resolved), ``database`` (the pool, errors mapped to
`toolsets.errors.StoreUnavailable`), ``migrations``, ``pending``, ``notify``, ``sessions``,
``session_book``, ``session_merge``, ``pins``, ``grants``, ``backend`` (builds them all).
"""

from gateway.config.storage import OnOutage, dsn_problem, redact_dsn
from gateway.postgres.settings import PostgresSettings

__all__ = ["OnOutage", "PostgresSettings", "dsn_problem", "redact_dsn"]
