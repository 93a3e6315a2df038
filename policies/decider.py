"""`PolicyDecider`: the policy as the call chain asks it, with per-session history."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import replace
from typing import Any

from policies.holder import PolicyHolder
from policies.session import SessionState
from toolsets.context import CallContext
from toolsets.decision import Decision
from toolsets.tooldef import ToolDef

__all__ = ["MAX_SESSIONS", "PolicyDecider"]

MAX_SESSIONS = 10_000
"""Sessions whose history is kept; the oldest are forgotten first."""


class PolicyDecider:
    """Implements the chain's ``Decider`` (calls) and visibility filter (listings).

    Args:
        policy: The current policy (reloads take effect on the next call or listing).
        deferred_servers: Servers with no executor here: an ``allow`` becomes ``defer``, so a
            worker answers.
    """

    def __init__(self, policy: PolicyHolder, *, deferred_servers: frozenset[str] = frozenset()):
        self.policy = policy
        self.deferred_servers = deferred_servers
        self._sessions: dict[str, SessionState] = {}

    def decide(self, tool: ToolDef, args: Mapping[str, Any], ctx: CallContext) -> Decision:
        """The decision for this call (the session is read, not advanced)."""
        decision = self.policy.current.evaluate_call(tool, args, ctx.principal, self._session(ctx))
        if decision.effect == "allow" and tool.server in self.deferred_servers:
            return replace(decision, effect="defer")
        return decision

    def record(self, tool: ToolDef, args: Mapping[str, Any], ctx: CallContext) -> None:
        """Count an answered call in its session."""
        self._session(ctx).record(tool.name, args)

    def visible(self, ctx: CallContext, tool: ToolDef) -> bool:
        """Whether listings show ``tool`` to ``ctx``'s principal."""
        return self.policy.current.evaluate_visibility(tool, ctx.principal).effect != "hide"

    def visibility_key(self, ctx: CallContext) -> Hashable:
        """Contexts with equal keys see the same tools (`visible` reads nothing else)."""
        principal = ctx.principal
        return (principal.id, principal.roles, principal.tenant, self.policy.current.version)

    def _session(self, ctx: CallContext) -> SessionState:
        key = f"{ctx.principal.id}:{ctx.session_id or ''}"
        state = self._sessions.get(key)
        if state is None:
            if len(self._sessions) >= MAX_SESSIONS:
                self._sessions.pop(next(iter(self._sessions)))
            state = self._sessions[key] = SessionState(ctx.session_id or key)
        return state
