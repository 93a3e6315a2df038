"""The event side of a gateway: its bus, the audit log and sink, the recorder, and (with the
PostgreSQL backend) the cluster's event log and webhook claims.

Embedded (the default): one in-process bus, a SQLite audit log per process. On PostgreSQL every
replica appends its events to one shared log and reads every replica's events back into
`gateway.runtime.EventParts.stream` (what SSE subscribers and webhooks read), the audit chain is
one table, and each webhook delivery is claimed by one replica (see `gateway.postgres.event_log`).
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import TYPE_CHECKING

from gateway.audit.log import AuditLog
from gateway.audit.sink import AuditSink, AuditWriter
from gateway.config.model import GatewayConfig
from gateway.events.bus import EventBus
from gateway.events.recorder import Recorder
from gateway.runtime.parts import EventParts
from toolsets.errors import LockgateError

if TYPE_CHECKING:
    from gateway.postgres.backend import PostgresBackend

__all__ = ["event_parts", "folder_for"]


def folder_for(path: Path, key: str) -> None:
    """Create the folder of a file the gateway writes, or say which setting to fix."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise LockgateError(
            f"cannot create the folder of {path} ({exc.strerror}): fix {key} in the config"
        ) from None


def _audit(config: GatewayConfig, shared: PostgresBackend | None) -> AuditWriter | None:
    if not config.events.audit.enabled:
        return None
    if shared is not None:
        from gateway.postgres.audit import PostgresAuditLog

        return PostgresAuditLog(shared.database)
    path = config.resolve(config.events.audit.path)
    folder_for(path, "events.audit.path")
    return AuditLog(path)


def event_parts(config: GatewayConfig, shared: PostgresBackend | None) -> EventParts:
    """The event parts of ``config`` (on ``shared`` when the PostgreSQL backend is selected)."""
    bus = EventBus(config.id, ring_size=config.events.ring_size)
    audit = _audit(config, shared)
    audit_sink = AuditSink(bus, audit) if audit is not None else None
    recorder = Recorder(bus, audit_sink)
    if shared is None:
        return EventParts(bus, audit, audit_sink, recorder)
    from gateway.postgres.event_log import EventLog
    from gateway.postgres.webhook_claims import WebhookClaims

    replica = f"{socket.gethostname()}:{os.getpid()}"
    cluster = EventLog(shared.database, bus, replica=replica, ring_size=config.events.ring_size)
    return EventParts(
        bus, audit, audit_sink, recorder, cluster, WebhookClaims(shared.database, replica)
    )
