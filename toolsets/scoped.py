"""`ScopedToolset`: a call needs the OAuth scopes the policy requires of its tool (the step-up).

A caller whose token lacks one is refused with `InsufficientScope` before anything else of the
chain sees the call: the HTTP face answers ``403`` with a ``WWW-Authenticate: Bearer
error="insufficient_scope", scope="..."`` challenge (its edge checks first), stdio a JSON-RPC
error naming the scopes. Listings are not changed: the caller may step up and call again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from toolsets.abstract import Toolset
from toolsets.context import CallContext, Principal
from toolsets.errors import LockgateError
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef
from toolsets.wrapper import WrapperToolset

__all__ = ["InsufficientScope", "ScopeRequirer", "ScopedToolset"]


class InsufficientScope(LockgateError):
    """The caller's token lacks scopes the call needs (RFC 6750 ``insufficient_scope``).

    Attributes:
        name: The tool called.
        scopes: The scopes it lacks, sorted.
    """

    def __init__(self, name: str, scopes: Sequence[str]) -> None:
        self.name = name
        self.scopes = tuple(scopes)
        super().__init__(
            f"Calling {name!r} needs the scope(s) {' '.join(self.scopes)}, which the caller's "
            "token does not hold: ask the authorization server for a token with them"
        )


class ScopeRequirer(Protocol):
    """The scopes calls need (the policy's, through `policies.held_scopes.HeldScopes`)."""

    def missing(self, tool: ToolDef, principal: Principal) -> Sequence[str]:
        """The scopes a call of ``tool`` needs that ``principal``'s token lacks."""
        ...


class ScopedToolset(WrapperToolset):
    """Refuses a call whose caller lacks a scope its tool requires; forwards the rest."""

    def __init__(self, wrapped: Toolset, scopes: ScopeRequirer) -> None:
        super().__init__(wrapped)
        self.scopes = scopes

    async def call_tool(
        self, name: str, args: Mapping[str, Any], ctx: CallContext, tool: ToolDef
    ) -> ToolResult:
        missing = self.scopes.missing(tool, ctx.principal)
        if missing:
            raise InsufficientScope(name, missing)
        return await self.wrapped.call_tool(name, args, ctx, tool)
