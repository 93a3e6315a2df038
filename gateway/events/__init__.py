"""Tool events: typed CloudEvents, the in-process bus, redaction and the webhook sink (the SSE
stream is `gateway.api.event_stream`, the audit log `gateway.audit`)."""

from gateway.config.events import WebhookConfig
from gateway.events.bus import BusStats, EventBus, Listener, Subscription, compile_patterns
from gateway.events.calls import BusObserver
from gateway.events.model import CONTROL_TYPES, EVENT_TYPES, GAP, RESET, Event, EventType
from gateway.events.redact import MASK, mask_credentials, redact
from gateway.events.tool_events import ALLOW, DecisionLike, SimpleDecision
from gateway.events.webhooks import WebhookSink

__all__ = [
    "ALLOW",
    "CONTROL_TYPES",
    "EVENT_TYPES",
    "GAP",
    "MASK",
    "RESET",
    "BusObserver",
    "BusStats",
    "DecisionLike",
    "Event",
    "EventBus",
    "EventType",
    "Listener",
    "SimpleDecision",
    "Subscription",
    "WebhookConfig",
    "WebhookSink",
    "compile_patterns",
    "mask_credentials",
    "redact",
]
