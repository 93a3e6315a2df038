"""Tool events: typed CloudEvents, the in-process bus and its sinks (SSE, webhooks, audit log)."""

from gateway.events.bus import BusStats, EventBus, Listener, Subscription, compile_patterns
from gateway.events.model import CONTROL_TYPES, EVENT_TYPES, GAP, RESET, Event, EventType
from gateway.events.redact import MASK, mask_credentials, redact
from gateway.events.toolset import DecisionLookup, EventsToolset
from gateway.events.types import ALLOW, DecisionLike, SimpleDecision

__all__ = [
    "ALLOW",
    "CONTROL_TYPES",
    "EVENT_TYPES",
    "GAP",
    "MASK",
    "RESET",
    "BusStats",
    "DecisionLike",
    "DecisionLookup",
    "Event",
    "EventBus",
    "EventType",
    "EventsToolset",
    "Listener",
    "SimpleDecision",
    "Subscription",
    "compile_patterns",
    "mask_credentials",
    "redact",
]
