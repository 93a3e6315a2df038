"""Tool events: typed CloudEvents, the in-process bus and its sinks (SSE, webhooks, audit log)."""

from gateway.api.event_stream import bearer_authorizer, events_endpoint
from gateway.audit.log import AuditEntry, AuditLog
from gateway.audit.sink import AuditSink
from gateway.audit.verify import VerifyReport, verify
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
    "AuditEntry",
    "AuditLog",
    "AuditSink",
    "BusObserver",
    "BusStats",
    "DecisionLike",
    "Event",
    "EventBus",
    "EventType",
    "Listener",
    "SimpleDecision",
    "Subscription",
    "VerifyReport",
    "WebhookConfig",
    "WebhookSink",
    "bearer_authorizer",
    "compile_patterns",
    "events_endpoint",
    "mask_credentials",
    "redact",
    "verify",
]
