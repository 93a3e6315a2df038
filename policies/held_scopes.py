"""`HeldScopes`: the scope requirements of whatever policy is current (`policies.scopes`)."""

from __future__ import annotations

from policies.holder import PolicyHolder
from toolsets.context import Principal
from toolsets.tooldef import ToolDef

__all__ = ["HeldScopes"]


class HeldScopes:
    """The scope requirements of the current policy (a reload takes effect on the next call);
    the chain's `toolsets.scoped.ScopeRequirer`."""

    def __init__(self, policy: PolicyHolder) -> None:
        self.policy = policy

    @property
    def all(self) -> frozenset[str]:
        """Every scope some rule of the current policy requires."""
        return self.policy.current.scopes.all

    def required(self, tool: ToolDef, principal: Principal) -> frozenset[str]:
        """The scopes a call of ``tool`` by ``principal`` needs."""
        return self.policy.current.scopes.required(tool, principal)

    def missing(self, tool: ToolDef, principal: Principal) -> tuple[str, ...]:
        """The scopes a call of ``tool`` needs that ``principal``'s token lacks."""
        return self.policy.current.scopes.missing(tool, principal)
