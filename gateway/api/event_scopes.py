"""Who sees which events on ``/api/events``.

- A **subscriber** sees every event its credential's ``events`` filter lets through (globs on
  ``types``, ``principals``, ``servers`` and ``tools``; an unset list lets everything through).
  Events that name no principal, server or tool (``upstream.status``, ``lockgate.*``) are
  filtered on ``types`` only.
- **Tenants** partition outright: a call's events carry its principal's ``tenant``, and only
  credentials of that tenant see them; a credential without a tenant sees only events without
  one (gateway-wide events such as ``upstream.status`` have none).
- An **approver** (that is not also a subscriber) sees the events of the held calls it may
  decide: ``tool.approval.*`` and ``tool.deferred`` whose pending call its rule lets it decide,
  and ``tool.pin_*`` when ``pins.approvers`` lets it accept changed definitions. Every other
  event is not for it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from fnmatch import fnmatchcase

from gateway.approvals.access import may_see
from gateway.approvals.store import PendingStore
from gateway.config.events import EventFilter
from gateway.events.model import Event
from toolsets.context import Principal

__all__ = ["Visible", "approver_scope", "subscriber_scope"]

Visible = Callable[[Event], Awaitable[bool]]
"""Whether one event may be sent on a stream."""


def _allows(globs: Sequence[str] | None, value: object) -> bool:
    if globs is None or value is None:
        return True
    return isinstance(value, str) and any(fnmatchcase(value, glob) for glob in globs)


def subscriber_scope(events: EventFilter | None, tenant: str | None = None) -> Visible:
    """The events a subscriber with ``events`` (of ``tenant``) sees."""

    async def visible(event: Event) -> bool:
        data = event.data if isinstance(event.data, dict) else {}
        if data.get("tenant") != tenant:
            return False
        if events is None:
            return True
        return (
            _allows(events.types, event.type)
            and _allows(events.principals, data.get("principal"))
            and _allows(events.servers, data.get("server"))
            and _allows(events.tools, data.get("tool"))
        )

    return visible


def approver_scope(who: Principal, store: PendingStore, *, pins: bool = False) -> Visible:
    """The events of the held calls ``who`` may decide (and, with ``pins``, ``tool.pin_*``)."""

    async def visible(event: Event) -> bool:
        if event.type.startswith("tool.pin_"):
            return pins
        data = event.data if isinstance(event.data, dict) else {}
        id = data.get("approval_id") or data.get("pending_id")
        if not isinstance(id, str):
            return False
        call = await store.get(id)
        return call is not None and may_see(call, who)

    return visible
