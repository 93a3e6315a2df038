"""`Parts`: everything a gateway is made of, as `gateway.wiring.compose` built it (not started)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from gateway.approvals.holding import Holding
from gateway.approvals.sealing import RequestStateSealer
from gateway.approvals.service import ApprovalService
from gateway.audit.sink import AuditSink, AuditWriter
from gateway.events.bus import EventBus
from gateway.events.recorder import Recorder
from gateway.events.webhooks import Claim
from gateway.mcp.relay import Relay
from gateway.metrics import Metrics
from gateway.pins import ToolPins
from gateway.resources.guard import ResourceGuard
from gateway.resources.service import ResourceService
from gateway.runtime.catalogue import CatalogueWatch
from gateway.runtime.readiness import Readiness
from gateway.runtime.signals import UpstreamSignals
from gateway.scripts.toolset import ScriptHost
from gateway.sessions.book import SessionBook
from gateway.tasks.service import TaskService
from gateway.vault import Vault
from policies import PolicyDecider, PolicyHolder
from toolsets.abstract import Toolset
from toolsets.combined import CombinedToolset
from toolsets.upstream.server import MCPServerToolset

if TYPE_CHECKING:
    from gateway.connect import ConnectGate
    from gateway.credentials import Credentials
    from gateway.postgres.event_log import EventLog
    from gateway.telemetry.provider import Telemetry

__all__ = ["EventParts", "Parts"]


@dataclass(frozen=True, slots=True)
class EventParts:
    """The event side of a gateway (`gateway.wiring.events` builds it).

    Attributes:
        bus: This process's bus: every event it publishes.
        audit: The audit log, when enabled.
        audit_sink: Appends bus events to ``audit``.
        recorder: Publishes events, writing decisions through to the audit log first.
        cluster: The shared event log (PostgreSQL backend only).
        claims: Decides which replica delivers each webhook event (PostgreSQL backend only).
    """

    bus: EventBus
    audit: AuditWriter | None
    audit_sink: AuditSink | None
    recorder: Recorder
    cluster: EventLog | None = None
    claims: Claim | None = None

    @property
    def stream(self) -> EventBus:
        """What subscribers read: every replica's events in one order, or this process's."""
        return self.bus if self.cluster is None else self.cluster.feed


@dataclass(frozen=True, slots=True)
class Parts:
    """Everything a gateway is made of (``gw.parts``); `gateway.runtime.GatewayRuntime` starts
    and stops what runs.

    Attributes:
        events: The bus, the audit log and sink, the recorder (and the cluster's event log).
        metrics: Prometheus metrics of this gateway (its own registry).
        policy: The current policy (atomically reloadable).
        approvals: Creates, decides and settles pending calls.
        holding: The pending calls whose caller this gateway holds open right now.
        sealer: Seals ``request_state`` for 2026-07-28 callers answering an approval.
        pins: Tool pins and the quarantine of changed definitions.
        sessions: Each downstream session's state.
        scripts: The script host (sandbox workers), when the config has scripts or hooks.
        upstreams: Upstream MCP server toolsets by server name.
        signals: What the upstreams tell the gateway (tool list changes, status).
        combined: Every server's tools under one name space.
        served: ``combined`` behind the pins: the catalogue the chain serves.
        root: The outermost toolset of the call chain (see docs/architecture.md).
        decider: The policy's decisions, and what each caller may see.
        readiness: The first use's wait for upstreams still connecting.
        catalogue: Tells listeners that the served catalogue changed.
        resource_guard: The policy over resources and prompts.
        resources: The upstreams' resources, prompts and completions (`gateway.resources`).
        relay: Upstream requests to the client (parked 2026-07-28 calls) and log messages.
        tasks: The gateway's MCP tasks (`gateway.tasks`).
        telemetry: OpenTelemetry tracing, when on (`gateway.telemetry`); None when off.
        vault: Per-caller upstream secrets, when a vault is configured.
        connect: Holds calls until their caller connects (`gateway.connect`), when a server
            has per-caller credentials.
        credentials: The credential provider of each per-caller server (`gateway.credentials`:
            whether a principal is connected, `start_connect`), when a vault is configured.
    """

    events: EventParts
    metrics: Metrics
    policy: PolicyHolder
    approvals: ApprovalService
    holding: Holding
    sealer: RequestStateSealer
    pins: ToolPins
    sessions: SessionBook
    scripts: ScriptHost | None
    upstreams: dict[str, MCPServerToolset]
    signals: UpstreamSignals
    combined: CombinedToolset
    served: Toolset
    root: Toolset
    decider: PolicyDecider
    readiness: Readiness
    catalogue: CatalogueWatch
    resource_guard: ResourceGuard
    resources: ResourceService
    relay: Relay
    tasks: TaskService
    telemetry: Telemetry | None = None
    vault: Vault | None = None
    connect: ConnectGate | None = None
    credentials: Credentials | None = None
