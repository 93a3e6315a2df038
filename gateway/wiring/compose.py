"""Building a gateway's parts from the config: the one place where the layers are wired.

``compose`` builds, in order: the stores and the policy, the served catalogue
(``Pinned( Combined( Prefixed(ResourceLinks(MCPServer))..., functions, scripts, external ))``),
the approval service over it, the call chain on top (`gateway.wiring.chain`), and the parts a
running gateway needs beside it (readiness, catalogue changes, resources, relay).

Nothing is bound after it is built. Where a part calls back into what holds it, the caller is
built first and builds the part with itself in hand: the chain's script tools re-enter the chain
at its top (`gateway.runtime.CallEntry` builds the chain); a pending store tells the approval
service over it of each expiry (`_Expiries` builds the service); the one exception, the connect
gate of per-caller servers, is bound to the pending store once the approvals are built.
Upstreams, built inside the catalogue that the followers read, report to `UpstreamSignals`,
which the followers subscribe to.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gateway.approvals.holding import Holding
from gateway.approvals.pending import PendingCall
from gateway.approvals.sealing import RequestStateSealer
from gateway.approvals.service import ApprovalService
from gateway.approvals.store import PendingListener
from gateway.config.labels import server_labels
from gateway.config.model import GatewayConfig
from gateway.config.servers import ServerConfig, function_specs
from gateway.connect import ConnectGate, Record
from gateway.connect.gate import connect_expired_event
from gateway.credentials import Credentials
from gateway.events.recorder import Recorder
from gateway.inspectors import build_inspection
from gateway.mcp.relay import Relay
from gateway.metrics import Metrics
from gateway.pins import ToolPins
from gateway.resources.policy_guard import PolicyResourceGuard
from gateway.resources.service import ResourceService
from gateway.runtime.catalogue import CatalogueWatch
from gateway.runtime.parts import EventParts, Parts
from gateway.runtime.readiness import Readiness
from gateway.runtime.signals import UpstreamSignals
from gateway.scripts.host import ToolCalls
from gateway.scripts.toolset import ScriptHost
from gateway.sessions.book import SessionBook
from gateway.sessions.group_loaders import GroupLoaders
from gateway.sessions.labels import SessionLabelSink
from gateway.tasks.service import TaskService
from gateway.telemetry import build_telemetry
from gateway.vault import Vault
from gateway.wiring.chain import call_chain
from gateway.wiring.connect import connect_gate, connected
from gateway.wiring.credentials import build_credentials, build_pool
from gateway.wiring.events import event_parts
from gateway.wiring.external import external_toolset
from gateway.wiring.own_sessions import session_pool
from gateway.wiring.scripts import script_hooks, script_host, script_toolset
from gateway.wiring.stores import (
    grant_store,
    pending_store,
    pin_store,
    rate_counter,
    session_book,
    shared_backend,
)
from gateway.wiring.tasks import task_service
from gateway.wiring.upstreams import build_upstream
from gateway.wiring.vault import build_vault
from policies import PolicyDecider, PolicyEngine, PolicyHolder
from toolsets.abstract import Toolset
from toolsets.combined import CombinedToolset
from toolsets.context import CallContext
from toolsets.errors import ConfigError, ConfigIssue
from toolsets.functions.toolset import FunctionTool, FunctionToolset, import_function
from toolsets.pinned import PinnedToolset
from toolsets.prefixed import PrefixedToolset
from toolsets.resource_links import ResourceLinksToolset
from toolsets.tooldef import ToolDef
from toolsets.upstream.per_principal import PerPrincipalToolset
from toolsets.upstream.server import MCPServerToolset
from toolsets.validated import SchemaValidators

if TYPE_CHECKING:
    from gateway.postgres.backend import PostgresBackend
    from gateway.telemetry.provider import Telemetry

__all__ = ["compose"]


def _policy(config: GatewayConfig) -> PolicyHolder:
    files = [config.resolve(f) for f in config.policies.files]
    if not files:
        return PolicyHolder(PolicyEngine.empty(config.policies.default_effect))
    return PolicyHolder.load(files, root=config.base_dir)


class _Expiries:
    """Announces each expiry, whichever store operation found the call overdue and recorded it.

    The store tells it; it announces through the service over that store: so it builds the
    service (``service(listener)``, the listener being itself) and holds it from the start.
    """

    def __init__(
        self, service: Callable[[PendingListener], ApprovalService], record: Record
    ) -> None:
        self.service, self.record = service(self), record

    async def __call__(self, call: PendingCall) -> None:
        if call.state == "expired" and call.kind == "connect":  # not an approval: no channel's
            await self.record(connect_expired_event(call))
        elif call.state == "expired":
            await self.service.announce(call)


def _pins(
    config: GatewayConfig,
    recorder: Recorder,
    servers: Sequence[str],
    shared: PostgresBackend | None,
    pooled: Sequence[str] = (),
) -> ToolPins:
    return ToolPins(
        pin_store(config, shared),
        servers=servers,
        pooled=pooled,
        on_change=config.pins.on_change,
        on_metadata_change=config.pins.on_metadata_change,
        approvers=config.pins.approvers,
        record=recorder.record,
    )


def _state_key(config: GatewayConfig) -> bytes | None:
    """``approvals.request_state_key`` (request states and connect links), or None."""
    spec = config.approvals.request_state_key
    if spec is None:
        return None
    value = os.environ.get(spec.removeprefix("env:"), "") if spec.startswith("env:") else spec
    try:
        key = bytes.fromhex(value)
        RequestStateSealer(key)  # checks its length
    except ValueError:
        issue = ConfigIssue("", None, None, "approvals.request_state_key", "needs >= 32 bytes hex")
        raise ConfigError([issue]) from None
    return key


def _sealer(config: GatewayConfig) -> RequestStateSealer:
    return RequestStateSealer(_state_key(config))


def _functions(config: GatewayConfig, server: ServerConfig) -> FunctionToolset:
    """Local functions; timeouts: the function's own, then the server's, then call_timeout."""
    tools = [
        FunctionTool(import_function(spec.function), name=spec.name, timeout=spec.timeout)
        for spec in function_specs(server)
    ]
    return FunctionToolset(
        tools,
        server=server.name,
        timeout=server.timeout,
        default_timeout=config.call_timeout,
        max_result_bytes=server.max_result_bytes,
    )


def _children(
    config: GatewayConfig,
    signals: UpstreamSignals,
    upstreams: dict[str, MCPServerToolset],
    host: ScriptHost | None,
    *,
    pools: list[PerPrincipalToolset],
    vault: Vault | None = None,
    gate: ConnectGate | None = None,
    credentials: Credentials | None = None,
) -> list[Toolset]:
    children: list[Toolset] = []
    for index, server in enumerate(config.servers):
        if not server.enabled:
            continue
        if server.credentials.per_principal and vault is not None:  # one connection per caller
            changed = signals.tools_changed
            pool, guarded = build_pool(
                config, server, vault, on_tools_changed=changed, connect=gate,
                credentials=credentials,
            )  # fmt: skip
            pools.append(pool)
            local: Toolset = ResourceLinksToolset(guarded, server.exposed_prefix)
        elif server.transport == "python":
            local = _functions(config, server)
        elif server.transport == "script":
            assert host is not None  # a script server makes `script_host` build one
            local = script_toolset(config, index, host)
        else:
            upstream = upstreams[server.name] = build_upstream(
                config, server, on_tools_changed=signals.tools_changed, on_status=signals.status
            )
            calls: Toolset = upstream
            if server.per_principal_sessions:  # roots relayed: each caller's own session
                changed = signals.tools_changed
                own = session_pool(config, server, upstream, on_tools_changed=changed)
                pools.append(own)
                calls = own
            local = ResourceLinksToolset(calls, server.exposed_prefix)  # URIs as names
        children.append(PrefixedToolset(local, server.exposed_prefix))
    if config.external_tools:
        children.append(external_toolset(config.external_tools))
    return children


def _approvals(
    config: GatewayConfig,
    served: _Served,
    validators: SchemaValidators,
    telemetry: Telemetry | None = None,
) -> ApprovalService:
    """The approval service over its pending store (which announces each expiry through it);
    it looks tools up in the ``served`` catalogue, after the first warm-up."""

    policy, recorder, sessions, shared = (
        served.policy,
        served.events.recorder,
        served.sessions,
        served.shared,
    )

    async def catalogue() -> dict[str, ToolDef]:
        await served.readiness.warm_up()
        return await served.served.get_tools(CallContext())

    def service(listener: PendingListener) -> ApprovalService:
        if telemetry is not None:  # each decision of a traced call writes its hold span
            listener = telemetry.hold_spans(listener)
        return ApprovalService(
            pending_store(config, listener, shared),
            policy,
            catalogue=catalogue,
            quarantine=served.pins.waits_for_review,
            record=recorder.record,
            validators=validators,
            sessions=sessions,
            max_pending=config.approvals.max_pending_per_principal,
            grant_store=grant_store(config, shared),
        )

    return _Expiries(service, recorder.record).service


@dataclass(frozen=True, slots=True)
class _Served:
    """What `compose` builds before the approvals and the chain: the stores, the policy, the
    served catalogue and what follows it."""

    shared: PostgresBackend | None
    policy: PolicyHolder
    sessions: SessionBook
    host: ScriptHost | None
    signals: UpstreamSignals
    upstreams: dict[str, MCPServerToolset]
    pools: list[PerPrincipalToolset]
    """The servers reached over each principal's own sessions (``upstreams`` has their own
    session, when they have one)."""
    combined: CombinedToolset
    events: EventParts
    pins: ToolPins
    served: PinnedToolset
    readiness: Readiness
    catalogue: CatalogueWatch
    vault: Vault | None
    connect: ConnectGate | None
    credentials: Credentials | None


def _served(config: GatewayConfig, calls: ToolCalls, extra: Sequence[Toolset]) -> _Served:
    """The stores, the policy and the served catalogue (`PinnedToolset` over every server)."""
    shared = shared_backend(config)
    policy = _policy(config)
    sessions = session_book(config, shared, policy)
    host = script_host(config, sessions, calls)
    signals = UpstreamSignals()
    upstreams: dict[str, MCPServerToolset] = {}
    events = event_parts(config, shared)
    vault = build_vault(config, shared, events.recorder.record)
    gate = None if vault is None else connect_gate(config, _state_key(config), vault)
    credentials = None if vault is None else build_credentials(config, vault, shared)
    pools: list[PerPrincipalToolset] = []
    children = _children(
        config, signals, upstreams, host, pools=pools, vault=vault, gate=gate,
        credentials=credentials,
    )  # fmt: skip
    combined = CombinedToolset([*children, GroupLoaders(policy, sessions), *extra])
    pooled = [s.name for s in config.enabled_servers() if s.per_principal_sessions]
    pins = _pins(config, events.recorder, [*upstreams, *pooled], shared, pooled)
    served = PinnedToolset(combined, pins)
    readiness = Readiness(upstreams, startup_wait=config.startup_wait, served=served, policy=policy)
    catalogue = CatalogueWatch(served, events.bus, readiness)
    signals.follow(changed=catalogue.changed)
    return _Served(
        shared, policy, sessions, host, signals, upstreams, pools, combined, events, pins,
        served, readiness, catalogue, vault, gate, credentials,
    )  # fmt: skip


def _chain(
    config: GatewayConfig,
    built: _Served,
    approvals: ApprovalService,
    validators: SchemaValidators,
    *,
    holding: Holding,
    telemetry: Telemetry | None,
) -> tuple[Toolset, PolicyDecider]:
    """The call chain over the served catalogue (`gateway.wiring.chain`), as configured."""
    return call_chain(
        built.served,
        built.events.bus,
        approvals,
        validators,
        sessions=built.sessions,
        hooks=script_hooks(config, built.host) if built.host is not None else None,
        holding=holding,
        rates=rate_counter(built.shared),
        progress_interval=config.approvals.progress_interval,
        server_labels=server_labels((s.name, s.labels) for s in config.enabled_servers()),
        inspection=build_inspection(config.inspectors),
        telemetry=telemetry,
    )


def _tasks(
    config: GatewayConfig, built: _Served, approvals: ApprovalService, calls: ToolCalls
) -> TaskService:
    """The gateway's tasks (`gateway.wiring.tasks`)."""
    return task_service(
        config,
        built.shared,
        upstreams=built.upstreams,
        events=built.events,
        approvals=approvals,
        sessions=built.sessions,
        catalogue=(built.combined, built.served, built.catalogue),
        pins=built.pins,
        calls=calls,
    )


def compose(config: GatewayConfig, calls: ToolCalls, *, extra: Sequence[Toolset] = ()) -> Parts:
    """Build (but do not start) the gateway's parts from ``config``; script tools and hooks
    call tools through ``calls``, the top of the chain (`gateway.runtime.CallEntry`)."""
    telemetry = build_telemetry(config)
    built = _served(config, telemetry.sub_calls(calls) if telemetry else calls, extra)
    validators = SchemaValidators()
    approvals = _approvals(config, built, validators, telemetry)
    holding, sessions, events = Holding(), built.sessions, built.events
    root, decider = _chain(
        config, built, approvals, validators, holding=holding, telemetry=telemetry
    )
    root = connected(root, built.vault, built.connect, approvals.store, events.recorder.record)
    guard = PolicyResourceGuard(
        approvals,
        events.recorder,
        sessions=sessions,
        holding=holding,
        labels=SessionLabelSink(sessions),
    )
    upstreams = built.upstreams
    return Parts(
        events=events,
        metrics=Metrics(),
        policy=built.policy,
        approvals=approvals,
        holding=holding,
        sealer=_sealer(config),
        pins=built.pins,
        sessions=sessions,
        scripts=built.host,
        upstreams=upstreams,
        signals=built.signals,
        combined=built.combined,
        served=built.served,
        root=root,
        decider=decider,
        readiness=built.readiness,
        catalogue=built.catalogue,
        resource_guard=guard,
        resources=ResourceService.for_config(
            config, upstreams, guard=guard, ready=built.readiness.warm_up, pools=built.pools
        ),
        relay=Relay([*upstreams.values(), *built.pools]),
        tasks=_tasks(config, built, approvals, calls),
        telemetry=telemetry,
        vault=built.vault,
        connect=built.connect,
        credentials=built.credentials,
    )
