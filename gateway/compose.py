"""Building the toolset chain from the config: the one place where the layers are wired.

``Filtered( Validating( Policy( ApprovalRequired( Events( Pinned( Combined(
Prefixed(MCPServer)..., functions, external )))))))``
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from gateway.approvals.holding import HeldCalls
from gateway.approvals.memory import MemoryPendingStore
from gateway.approvals.pending import PendingCall
from gateway.approvals.sealing import RequestStateSealer
from gateway.approvals.service import ApprovalService
from gateway.approvals.sqlite import SQLitePendingStore
from gateway.approvals.store import PendingListener, PendingStore
from gateway.config import GatewayConfig, ServerConfig, function_specs
from gateway.events.audit import AuditLog
from gateway.events.audit_sink import AuditSink
from gateway.events.bus import EventBus
from gateway.events.calls import BusObserver
from gateway.events.recorder import Recorder
from gateway.external import EXTERNAL_SERVER, external_toolset
from gateway.group_loaders import GroupLoaders
from gateway.metrics import Metrics
from gateway.pins import MemoryPinStore, PinStore, SQLitePinStore, ToolPins
from gateway.refusals import Refusals
from gateway.scripts.build import script_hooks, script_host, script_toolset
from gateway.scripts.toolset import ScriptHost
from gateway.sessions.book import SessionBook
from gateway.sessions.store import MemorySessionStore, SQLiteSessionStore
from gateway.upstreams import build_upstream
from policies import PolicyDecider, PolicyEngine, PolicyHolder
from toolsets.abstract import ToolsChangedHandler, Toolset
from toolsets.approval_required import ApprovalRequiredToolset
from toolsets.combined import CombinedToolset
from toolsets.context import CallContext
from toolsets.errors import ConfigError, ConfigIssue, LockgateError
from toolsets.events import EventsToolset
from toolsets.filtered import FilteredToolset
from toolsets.function import FunctionTool, FunctionToolset, import_function
from toolsets.hooked import CallHooks, HookedToolset
from toolsets.mcp_server import MCPServerToolset, StatusHandler
from toolsets.pinned import PinnedToolset
from toolsets.policy import PolicyToolset
from toolsets.prefixed import PrefixedToolset
from toolsets.tooldef import ToolDef
from toolsets.validated import SchemaValidators, ValidatingToolset

__all__ = ["Parts", "compose"]


@dataclass(slots=True)
class Parts:
    """Everything a running gateway is made of."""

    bus: EventBus
    recorder: Recorder
    audit: AuditLog | None
    audit_sink: AuditSink | None
    metrics: Metrics
    policy: PolicyHolder
    approvals: ApprovalService
    sealer: RequestStateSealer
    combined: CombinedToolset
    pins: ToolPins
    sessions: SessionBook
    scripts: ScriptHost | None
    served: Toolset
    decider: PolicyDecider
    upstreams: dict[str, MCPServerToolset]
    root: Toolset


def _policy(config: GatewayConfig) -> PolicyHolder:
    files = [config.resolve(f) for f in config.policies.files]
    if not files:
        return PolicyHolder(PolicyEngine.empty(config.policies.default_effect))
    return PolicyHolder.load(files)


class _Expiries:
    """Announces each expiry, whichever store operation found the call overdue and recorded it."""

    service: ApprovalService | None = None

    async def __call__(self, call: PendingCall) -> None:
        if call.state == "expired" and self.service is not None:
            await self.service.announce(call)


def _audit(config: GatewayConfig) -> AuditLog | None:
    if not config.events.audit.enabled:
        return None
    path = config.resolve(config.events.audit.path)
    _folder_for(path, "events.audit.path")
    return AuditLog(path)


def _store(config: GatewayConfig, listener: PendingListener) -> PendingStore:
    if config.approvals.store == "memory":
        return MemoryPendingStore(listener=listener)
    path = config.resolve(config.approvals.path)
    _folder_for(path, "approvals.path")
    return SQLitePendingStore(path, listener=listener)


def _pin_store(config: GatewayConfig) -> PinStore:
    """Pins live beside the pending calls: in memory, or in the same SQLite file."""
    if config.approvals.store == "memory":
        return MemoryPinStore()
    return SQLitePinStore(config.resolve(config.approvals.path))


def _sessions(config: GatewayConfig) -> SessionBook:
    """Session state lives beside the pending calls: in memory, or in the same SQLite file."""
    if config.approvals.store == "memory":
        return SessionBook(MemorySessionStore())
    return SessionBook(SQLiteSessionStore(config.resolve(config.approvals.path)))


def _pins(config: GatewayConfig, recorder: Recorder, servers: Sequence[str]) -> ToolPins:
    return ToolPins(
        _pin_store(config),
        servers=servers,
        on_change=config.pins.on_change,
        on_metadata_change=config.pins.on_metadata_change,
        approvers=config.pins.approvers,
        record=recorder.record,
    )


def _folder_for(path: Path, key: str) -> None:
    """Create the folder of a file the gateway writes, or say which setting to fix."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise LockgateError(
            f"cannot create the folder of {path} ({exc.strerror}): fix {key} in the config"
        ) from None


def _sealer(config: GatewayConfig) -> RequestStateSealer:
    spec = config.approvals.request_state_key
    if spec is None:
        return RequestStateSealer()
    value = os.environ.get(spec.removeprefix("env:"), "") if spec.startswith("env:") else spec
    try:
        return RequestStateSealer(bytes.fromhex(value))
    except ValueError:
        issue = ConfigIssue("", None, None, "approvals.request_state_key", "needs >= 32 bytes hex")
        raise ConfigError([issue]) from None


def _functions(config: GatewayConfig, server: ServerConfig) -> FunctionToolset:
    """Local functions; timeouts: the function's own, then the server's, then call_timeout."""
    tools = [
        FunctionTool(import_function(spec.function), name=spec.name, timeout=spec.timeout)
        for spec in function_specs(server)
    ]
    return FunctionToolset(
        tools, server=server.name, timeout=server.timeout, default_timeout=config.call_timeout
    )


def _children(
    config: GatewayConfig,
    on_changed: ToolsChangedHandler,
    on_status: StatusHandler,
    upstreams: dict[str, MCPServerToolset],
    host: ScriptHost | None,
) -> list[Toolset]:
    children: list[Toolset] = []
    for index, server in enumerate(config.servers):
        if not server.enabled:
            continue
        if server.transport == "python":
            local: Toolset = _functions(config, server)
        elif server.transport == "script":
            assert host is not None  # a script server makes `_script_host` build one
            local = script_toolset(config, index, host)
        else:
            local = upstreams[server.name] = build_upstream(
                config, server, on_tools_changed=on_changed, on_status=on_status
            )
        children.append(PrefixedToolset(local, server.exposed_prefix))
    if config.external_tools:
        children.append(external_toolset(config.external_tools))
    return children


def _chain(
    config: GatewayConfig,
    served: Toolset,
    bus: EventBus,
    approvals: ApprovalService,
    validators: SchemaValidators,
    *,
    sessions: SessionBook,
    hooks: CallHooks | None,
) -> tuple[Toolset, PolicyDecider]:
    """The call chain over ``served``, and its hide predicate; each step is one wrapper in
    ``toolsets/``, and the order below is the order a call passes them (docs/architecture.md)."""
    refuse = Refusals(approvals.record)
    held = HeldCalls(approvals, refuse, progress_interval=config.approvals.progress_interval)
    decider = PolicyDecider(
        approvals.policy, sessions, deferred_servers=frozenset({EXTERNAL_SERVER})
    )
    chain: Toolset = EventsToolset(served, BusObserver(bus))
    chain = ApprovalRequiredToolset(chain, held)
    chain = PolicyToolset(chain, decider, refuse)
    if hooks is not None:
        chain = HookedToolset(chain, hooks, validators)
    chain = ValidatingToolset(chain, validators)
    return FilteredToolset(chain, decider.visible, cache_key=decider.visibility_key), decider


def _events(config: GatewayConfig) -> tuple[EventBus, AuditLog | None, AuditSink | None, Recorder]:
    """The bus, the audit log and its sink (when enabled), and the recorder over them."""
    bus = EventBus(config.id, ring_size=config.events.ring_size)
    audit = _audit(config)
    audit_sink = AuditSink(bus, audit) if audit is not None else None
    return bus, audit, audit_sink, Recorder(bus, audit_sink)


def _approvals(
    config: GatewayConfig,
    policy: PolicyHolder,
    recorder: Recorder,
    *,
    validators: SchemaValidators,
    sessions: SessionBook,
    served: Toolset,
    warm_up: Callable[[], Awaitable[None]],
) -> ApprovalService:
    """The approval service over its pending store (which announces each expiry through it);
    it looks tools up in the ``served`` catalogue, after the first ``warm_up``."""

    async def catalogue() -> dict[str, ToolDef]:
        await warm_up()
        return await served.get_tools(CallContext())

    expiries = _Expiries()
    approvals = ApprovalService(
        _store(config, expiries),
        policy,
        catalogue=catalogue,
        record=recorder.record,
        validators=validators,
        sessions=sessions,
        max_pending=config.approvals.max_pending_per_principal,
    )
    expiries.service = approvals
    return approvals


def compose(
    config: GatewayConfig,
    *,
    on_changed: ToolsChangedHandler,
    on_status: StatusHandler,
    warm_up: Callable[[], Awaitable[None]],
    extra: Sequence[Toolset] = (),
) -> Parts:
    """Build (but do not start) the gateway's parts from ``config``; ``warm_up`` waits, the first
    time, for upstreams still making their first connection (see `Gateway.tools`)."""
    upstreams: dict[str, MCPServerToolset] = {}
    policy, sessions = _policy(config), _sessions(config)
    host = script_host(config, sessions)
    children = _children(config, on_changed, on_status, upstreams, host)
    combined = CombinedToolset([*children, GroupLoaders(policy, sessions), *extra])
    bus, audit, audit_sink, recorder = _events(config)
    pins = _pins(config, recorder, list(upstreams))
    served = PinnedToolset(combined, pins)
    validators = SchemaValidators()
    approvals = _approvals(
        config,
        policy,
        recorder,
        validators=validators,
        sessions=sessions,
        served=served,
        warm_up=warm_up,
    )
    hooks = script_hooks(config, host) if host is not None else None
    chain = _chain(config, served, bus, approvals, validators, sessions=sessions, hooks=hooks)
    root, decider = chain
    return Parts(
        bus=bus,
        recorder=recorder,
        audit=audit,
        audit_sink=audit_sink,
        metrics=Metrics(),
        policy=policy,
        approvals=approvals,
        sealer=_sealer(config),
        combined=combined,
        pins=pins,
        sessions=sessions,
        scripts=host,
        served=served,
        decider=decider,
        upstreams=upstreams,
        root=root,
    )
