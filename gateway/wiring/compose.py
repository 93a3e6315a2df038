"""Building the toolset chain from the config: the one place where the layers are wired.

``Filtered( Validating( Policy( RateLimited( ApprovalRequired( Events( Pinned( Combined(
Prefixed(ResourceLinks(MCPServer))..., functions, external ))))))))``
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gateway.approvals.grant_store import GrantStore
from gateway.approvals.holding import HeldCalls, Holding
from gateway.approvals.pending import PendingCall
from gateway.approvals.refusals import Refusals
from gateway.approvals.sealing import RequestStateSealer
from gateway.approvals.service import ApprovalService
from gateway.approvals.store import PendingListener, PendingStore
from gateway.config.model import GatewayConfig
from gateway.config.servers import ServerConfig, function_specs
from gateway.events.bus import EventBus
from gateway.events.calls import BusObserver
from gateway.events.recorder import Recorder
from gateway.memory.grants import MemoryGrantStore
from gateway.memory.pending import MemoryPendingStore
from gateway.memory.pins import MemoryPinStore
from gateway.memory.rate_counter import MemoryRateCounter
from gateway.memory.sessions import MemorySessionStore
from gateway.metrics import Metrics
from gateway.pins import PinStore, ToolPins
from gateway.resources.policy_guard import PolicySurfaceGuard
from gateway.scripts.toolset import ScriptHost
from gateway.sessions.book import SessionBook
from gateway.sessions.group_loaders import GroupLoaders
from gateway.sqlite.grants import SQLiteGrantStore
from gateway.sqlite.pending import SQLitePendingStore
from gateway.sqlite.pins import SQLitePinStore
from gateway.sqlite.sessions import SQLiteSessionStore
from gateway.wiring.events import EventParts, event_parts, folder_for
from gateway.wiring.external import EXTERNAL_SERVER, external_toolset
from gateway.wiring.scripts import has_scripts, script_hooks, script_host, script_toolset
from gateway.wiring.upstreams import build_upstream
from policies import PolicyDecider, PolicyEngine, PolicyHolder
from toolsets.abstract import ToolsChangedHandler, Toolset
from toolsets.approval_required import ApprovalRequiredToolset
from toolsets.combined import CombinedToolset
from toolsets.context import CallContext
from toolsets.errors import ConfigError, ConfigIssue
from toolsets.events import EventsToolset
from toolsets.filtered import FilteredToolset
from toolsets.functions.toolset import FunctionTool, FunctionToolset, import_function
from toolsets.hooked import CallHooks, HookedToolset
from toolsets.pinned import PinnedToolset
from toolsets.policy import PolicyToolset
from toolsets.prefixed import PrefixedToolset
from toolsets.rate_limited import RateLimitedToolset
from toolsets.rates import RateCounter
from toolsets.resource_links import ResourceLinksToolset
from toolsets.tooldef import ToolDef
from toolsets.upstream.server import MCPServerToolset, StatusHandler
from toolsets.validated import SchemaValidators, ValidatingToolset

if TYPE_CHECKING:
    from gateway.postgres.backend import PostgresBackend

__all__ = ["Parts", "compose"]


@dataclass(slots=True)
class Parts:
    """Everything a running gateway is made of."""

    events: EventParts
    metrics: Metrics
    policy: PolicyHolder
    approvals: ApprovalService
    holding: Holding
    sealer: RequestStateSealer
    combined: CombinedToolset
    pins: ToolPins
    sessions: SessionBook
    scripts: ScriptHost | None
    served: Toolset
    decider: PolicyDecider
    upstreams: dict[str, MCPServerToolset]
    root: Toolset
    surface_guard: PolicySurfaceGuard


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


def _shared(config: GatewayConfig) -> PostgresBackend | None:
    """The PostgreSQL backend when ``storage.backend`` selects it: every shared store on it."""
    if config.storage.backend != "postgres":
        return None
    try:
        from gateway.postgres.backend import PostgresBackend
    except ImportError as exc:
        issue = ConfigIssue("", None, None, "storage.backend", f"postgres needs {exc.name!r}")
        raise ConfigError([issue]) from None  # install with: pip install 'lockgate[postgres]'
    return PostgresBackend.from_config(config)


def _store(
    config: GatewayConfig, listener: PendingListener, shared: PostgresBackend | None
) -> PendingStore:
    if shared is not None:
        return shared.pending_store(listener)
    if config.approvals.store == "memory":
        return MemoryPendingStore(listener=listener)
    path = config.resolve(config.approvals.path)
    folder_for(path, "approvals.path")
    return SQLitePendingStore(path, listener=listener)


def _pin_store(config: GatewayConfig, shared: PostgresBackend | None) -> PinStore:
    """Pins live beside the pending calls: in memory, the same SQLite file, or PostgreSQL."""
    if shared is not None:
        return shared.pin_store()
    if config.approvals.store == "memory":
        return MemoryPinStore()
    return SQLitePinStore(config.resolve(config.approvals.path))


def _grant_store(config: GatewayConfig, shared: PostgresBackend | None) -> GrantStore:
    """Grants live beside the pending calls: in memory, the same SQLite file, or PostgreSQL."""
    if shared is not None:
        return shared.grant_store()
    if config.approvals.store == "memory":
        return MemoryGrantStore()
    return SQLiteGrantStore(config.resolve(config.approvals.path))


def _sessions(
    config: GatewayConfig, shared: PostgresBackend | None, policy: PolicyHolder
) -> SessionBook:
    """Session state lives beside the pending calls: in memory, the same SQLite file, or
    PostgreSQL (read and written through while decisions read it, for replicas)."""
    if shared is not None:
        scripted = has_scripts(config)
        return shared.session_book(lambda: scripted or policy.current.uses_session)
    if config.approvals.store == "memory":
        return SessionBook(MemorySessionStore())
    return SessionBook(SQLiteSessionStore(config.resolve(config.approvals.path)))


def _pins(
    config: GatewayConfig,
    recorder: Recorder,
    servers: Sequence[str],
    shared: PostgresBackend | None,
) -> ToolPins:
    return ToolPins(
        _pin_store(config, shared),
        servers=servers,
        on_change=config.pins.on_change,
        on_metadata_change=config.pins.on_metadata_change,
        approvers=config.pins.approvers,
        record=recorder.record,
    )


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
            upstream = upstreams[server.name] = build_upstream(
                config, server, on_tools_changed=on_changed, on_status=on_status
            )
            local = ResourceLinksToolset(upstream, server.exposed_prefix)  # URIs as names
        children.append(PrefixedToolset(local, server.exposed_prefix))
    if config.external_tools:
        children.append(external_toolset(config.external_tools))
    return children


def _rate_counter(shared: PostgresBackend | None) -> RateCounter:
    """Rate-limit counters: shared by the replicas on PostgreSQL, else in this process."""
    return shared.rate_counter() if shared is not None else MemoryRateCounter()


def _chain(
    config: GatewayConfig,
    served: Toolset,
    bus: EventBus,
    approvals: ApprovalService,
    validators: SchemaValidators,
    *,
    sessions: SessionBook,
    hooks: CallHooks | None,
    holding: Holding,
    rates: RateCounter,
) -> tuple[Toolset, PolicyDecider]:
    """The call chain over ``served``, and its hide predicate; each step is one wrapper in
    ``toolsets/``, and the order below is the order a call passes them (docs/architecture.md)."""
    refuse = Refusals(approvals.record)
    interval = config.approvals.progress_interval
    held = HeldCalls(approvals, refuse, progress_interval=interval, holding=holding)
    decider = PolicyDecider(
        approvals.policy, sessions, deferred_servers=frozenset({EXTERNAL_SERVER})
    )
    observer = BusObserver(bus)
    chain: Toolset = EventsToolset(served, observer)
    chain = ApprovalRequiredToolset(chain, held)
    chain = RateLimitedToolset(chain, rates, observer)
    chain = PolicyToolset(chain, decider, refuse)
    if hooks is not None:
        chain = HookedToolset(chain, hooks, validators)
    chain = ValidatingToolset(chain, validators)
    return FilteredToolset(chain, decider.visible, cache_key=decider.visibility_key), decider


def _approvals(
    config: GatewayConfig,
    policy: PolicyHolder,
    recorder: Recorder,
    *,
    validators: SchemaValidators,
    sessions: SessionBook,
    served: Toolset,
    warm_up: Callable[[], Awaitable[None]],
    shared: PostgresBackend | None,
) -> ApprovalService:
    """The approval service over its pending store (which announces each expiry through it);
    it looks tools up in the ``served`` catalogue, after the first ``warm_up``."""

    async def catalogue() -> dict[str, ToolDef]:
        await warm_up()
        return await served.get_tools(CallContext())

    expiries = _Expiries()
    approvals = ApprovalService(
        _store(config, expiries, shared),
        policy,
        catalogue=catalogue,
        record=recorder.record,
        validators=validators,
        sessions=sessions,
        max_pending=config.approvals.max_pending_per_principal,
        grant_store=_grant_store(config, shared),
    )
    expiries.service = approvals
    return approvals


def _call_side(
    config: GatewayConfig,
    served: Toolset,
    events: EventParts,
    policy: PolicyHolder,
    *,
    sessions: SessionBook,
    host: ScriptHost | None,
    shared: PostgresBackend | None,
    warm_up: Callable[[], Awaitable[None]],
) -> tuple[ApprovalService, Holding, Toolset, PolicyDecider]:
    """What a call passes over the ``served`` catalogue: the approval service, the calls held
    for it, and the call chain with its hide predicate."""
    validators = SchemaValidators()
    approvals = _approvals(
        config,
        policy,
        events.recorder,
        validators=validators,
        sessions=sessions,
        served=served,
        warm_up=warm_up,
        shared=shared,
    )
    hooks = script_hooks(config, host) if host is not None else None
    holding = Holding()
    root, decider = _chain(
        config,
        served,
        events.bus,
        approvals,
        validators,
        sessions=sessions,
        hooks=hooks,
        holding=holding,
        rates=_rate_counter(shared),
    )
    return approvals, holding, root, decider


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
    shared = _shared(config)
    policy = _policy(config)
    sessions = _sessions(config, shared, policy)
    host = script_host(config, sessions)
    children = _children(config, on_changed, on_status, upstreams, host)
    combined = CombinedToolset([*children, GroupLoaders(policy, sessions), *extra])
    events = event_parts(config, shared)
    pins = _pins(config, events.recorder, list(upstreams), shared)
    served = PinnedToolset(combined, pins)
    approvals, holding, root, decider = _call_side(
        config, served, events, policy, sessions=sessions, host=host, shared=shared, warm_up=warm_up
    )
    return Parts(
        events=events,
        metrics=Metrics(),
        policy=policy,
        approvals=approvals,
        holding=holding,
        sealer=_sealer(config),
        combined=combined,
        pins=pins,
        sessions=sessions,
        scripts=host,
        served=served,
        decider=decider,
        upstreams=upstreams,
        root=root,
        surface_guard=PolicySurfaceGuard(
            approvals, events.recorder, sessions=sessions, holding=holding
        ),
    )
