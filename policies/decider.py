"""`PolicyDecider`: the policy as the call chain asks it, with each session's history."""

from __future__ import annotations

import time
from collections.abc import Hashable, Mapping
from dataclasses import replace
from typing import Any, Protocol

from policies.holder import PolicyHolder
from policies.session import SessionState
from policies.session_labels import LabelSource
from policies.tool_labels import ServerLabels
from toolsets.canonical import canonical_json
from toolsets.context import CallContext
from toolsets.decision import Decision
from toolsets.tooldef import ToolDef

__all__ = ["PolicyDecider", "SessionSource"]


class SessionSource(Protocol):
    """Per-session state (the gateway's `SessionBook`): loaded before a listing or call."""

    def get(self, ctx: CallContext) -> SessionState:
        """The state of ``ctx``'s session."""
        ...

    def changed(self, ctx: CallContext) -> None:
        """``ctx``'s state changed (save it)."""
        ...


class PolicyDecider:
    """Implements the chain's ``Decider`` (calls) and visibility filter (listings).

    Args:
        policy: The current policy (reloads take effect on the next call or listing).
        sessions: Where each session's state lives.
        deferred_servers: Servers with no executor here: an ``allow`` becomes ``defer``, so a
            worker answers.
        server_labels: Each server's label settings (``servers[].labels`` in the config).
    """

    def __init__(
        self,
        policy: PolicyHolder,
        sessions: SessionSource,
        *,
        deferred_servers: frozenset[str] = frozenset(),
        server_labels: Mapping[str, ServerLabels] | None = None,
    ):
        self.policy = policy
        self.sessions = sessions
        self.deferred_servers = deferred_servers
        self.server_labels: Mapping[str, ServerLabels] = server_labels or {}

    def decide(self, tool: ToolDef, args: Mapping[str, Any], ctx: CallContext) -> Decision:
        """The decision for this call (the session is read, not advanced)."""
        session = self.sessions.get(ctx)
        server = self.server_labels.get(tool.server)
        decision = self.policy.current.evaluate_call(tool, args, ctx.principal, session, server)
        if decision.effect == "allow" and tool.server in self.deferred_servers:
            return replace(decision, effect="defer")
        return decision

    def record(self, tool: ToolDef, args: Mapping[str, Any], ctx: CallContext, ok: bool) -> None:
        """Count an answered call in its session (``ok``: its result was not an error); a call
        that succeeded adds its tool's source labels to the session."""
        state = self.sessions.get(ctx)
        state.record(tool.name, args, ok=ok)
        state.tenant = ctx.principal.tenant
        labels = ctx.decision.labels if ctx.decision is not None else None
        if ok and labels is not None and labels.adds:
            source = LabelSource(call_id=ctx.call_id, tool=tool.name, at=time.time())
            state.add_labels(labels.adds, source)
        self.sessions.changed(ctx)

    def visible(self, ctx: CallContext, tool: ToolDef) -> bool:
        """Whether listings show ``tool`` in ``ctx``'s session."""
        engine = self.policy.current
        session = self.sessions.get(ctx) if engine.reads_session else None
        server = self.server_labels.get(tool.server)
        return engine.evaluate_visibility(tool, ctx.principal, session, server).effect != "hide"

    def visibility_key(self, ctx: CallContext) -> Hashable:
        """Contexts with equal keys see the same tools (`visible` reads nothing else): the
        principal (its claims and connections too: conditions read them), the policy, and what
        of the session the policy's listing reads."""
        principal, engine = ctx.principal, self.policy.current
        session = engine.session_key(self.sessions.get(ctx)) if engine.reads_session else None
        claims = canonical_json(principal.claims) if principal.claims else None
        ids = (principal.id, principal.roles, principal.tenant, principal.connections)
        return (*ids, claims, engine.version, session)
