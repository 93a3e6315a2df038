"""`Recorder`: events that must be on record before their decision takes effect.

A deny, a hold for approval, a deferral and an approval decision are appended to the audit log
(durably) before the caller or anyone else is told; only then is the event published. When the
audit log cannot be written, `record` raises and the caller fails closed.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from gateway.audit.sink import AuditSink
from gateway.events.bus import EventBus
from gateway.events.model import Event
from toolsets.errors import AuditUnavailable

__all__ = ["Recorder"]

log = logging.getLogger("lockgate.audit")


class Recorder:
    """Audit first (when an audit log is configured), then publish."""

    def __init__(self, bus: EventBus, audit: AuditSink | None) -> None:
        self.bus = bus
        self.audit = audit

    async def record(self, event: Event) -> None:
        """Put ``event`` durably on the audit log, then publish it on the bus.

        Raises:
            AuditUnavailable: the audit log could not be written; nothing was published then.
        """
        if not event.source:
            # Stamp it here, not in `publish`: the envelope on record is the one subscribers get.
            event = replace(event, source=self.bus.source)
        if self.audit is not None:
            try:
                await self.audit.write_through(event)
            except Exception as exc:
                log.error("audit log %s not written: %r", self.audit.path, exc)
                raise AuditUnavailable(
                    f"the audit log at {self.audit.path} cannot be written ({exc}); nothing "
                    "that needs a decision on record can happen until it can (disk full?)"
                ) from exc
        self.bus.publish(event)
