"""The call chain: one wrapper of `toolsets/` per step, in the order a call passes them.

``Filtered( Scoped( Validating( [Hooked(] Policy( RateLimited( ApprovalRequired( Events(
served )))))))`` over the served catalogue,
``Pinned( Combined( Prefixed(ResourceLinks(MCPServer)), ...))`` (`gateway.wiring.compose`).
docs/architecture.md draws it; a test keeps the two in step.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from gateway.approvals.holding import HeldCalls, Holding
from gateway.approvals.refusals import Refusals
from gateway.approvals.service import ApprovalService
from gateway.config.servers import EXTERNAL_SERVER
from gateway.events.bus import EventBus
from gateway.events.calls import BusObserver
from gateway.inspectors import Inspection
from gateway.sessions.book import SessionBook
from gateway.sessions.labels import SessionLabelSink
from policies import PolicyDecider
from policies.held_scopes import HeldScopes
from policies.tool_labels import ServerLabels
from toolsets.abstract import Toolset
from toolsets.approval_required import ApprovalRequiredToolset
from toolsets.events import CallObserver, EventsToolset
from toolsets.filtered import FilteredToolset
from toolsets.findings import Direction
from toolsets.hooked import CallHooks, HookedToolset
from toolsets.inspected import InspectedToolset
from toolsets.policy import PolicyToolset
from toolsets.rate_limited import RateLimitedToolset
from toolsets.rates import RateCounter
from toolsets.scoped import ScopedToolset
from toolsets.traced import TracedToolset
from toolsets.validated import SchemaValidators, ValidatingToolset

if TYPE_CHECKING:
    from gateway.telemetry.provider import Telemetry

__all__ = ["call_chain", "result_steps"]


def call_chain(
    served: Toolset,
    bus: EventBus,
    approvals: ApprovalService,
    validators: SchemaValidators,
    *,
    sessions: SessionBook,
    hooks: CallHooks | None,
    holding: Holding,
    rates: RateCounter,
    progress_interval: float,
    server_labels: Mapping[str, ServerLabels] | None = None,
    inspection: Inspection | None = None,
    telemetry: Telemetry | None = None,
) -> tuple[Toolset, PolicyDecider]:
    """The call chain over ``served`` (its top), and its hide predicate; the order below is the
    order a call passes the wrappers, innermost first. With ``telemetry``, each step that does
    work is wrapped in a `TracedToolset` (none is inserted without it)."""
    refuse = Refusals(approvals.record)
    observe = telemetry.held if telemetry is not None else None
    held = HeldCalls(
        approvals, refuse, progress_interval=progress_interval, holding=holding, observe=observe
    )
    traced = _tracing(telemetry)
    decider = PolicyDecider(
        approvals.policy,
        sessions,
        deferred_servers=frozenset({EXTERNAL_SERVER}),
        server_labels=server_labels,
    )
    observer = BusObserver(bus)
    upstream = traced("upstream", served)
    chain = result_steps(
        upstream, observer, refuse, sessions=sessions, inspection=inspection, traced=traced
    )
    chain = traced("approval", ApprovalRequiredToolset(chain, held))
    arguments = _inspected(chain, inspection, "arguments", refuse, sessions)
    chain = traced("inspect_arguments", arguments, chain)
    chain = traced("rate_limit", RateLimitedToolset(chain, rates, observer))
    chain = traced("policy", PolicyToolset(chain, decider, refuse))
    if hooks is not None:
        chain = traced("hooks", HookedToolset(chain, hooks, validators))
    chain = traced("validation", ValidatingToolset(chain, validators))
    chain = ScopedToolset(chain, HeldScopes(approvals.policy))
    return FilteredToolset(chain, decider.visible, cache_key=decider.visibility_key), decider


def result_steps(
    inner: Toolset,
    observer: CallObserver,
    refuse: Refusals,
    *,
    sessions: SessionBook,
    inspection: Inspection | None,
    traced: Callable[..., Toolset] | None = None,
) -> Toolset:
    """The steps a result passes on its way up from ``inner`` (the tools): content inspection
    of results, then the ``tool.result`` event; a finished task's result passes them too
    (`gateway.tasks.results`)."""
    traced = traced or _tracing(None)
    results = _inspected(inner, inspection, "results", refuse, sessions)
    return EventsToolset(traced("inspect_results", results, inner), observer)


def _tracing(telemetry: Telemetry | None) -> Callable[..., Toolset]:
    """Wraps a step in its `TracedToolset` when tracing, else returns it as it is; a step that
    may be absent (``toolset is below``: no inspection configured) is never wrapped."""

    def untraced(_step: str, toolset: Toolset, below: Toolset | None = None) -> Toolset:
        return toolset

    if telemetry is None:
        return untraced
    steps = telemetry.steps

    def traced(step: str, toolset: Toolset, below: Toolset | None = None) -> Toolset:
        return toolset if toolset is below else TracedToolset(step, toolset, steps)

    return traced


def _inspected(
    chain: Toolset,
    inspection: Inspection | None,
    direction: Direction,
    refuse: Refusals,
    sessions: SessionBook,
) -> Toolset:
    """``chain`` under content inspection of ``direction``, when inspectors are configured."""
    if inspection is None:
        return chain
    labels = SessionLabelSink(sessions)
    return InspectedToolset(chain, inspection, direction=direction, refuse=refuse, labels=labels)
