"""`HookedToolset`: operator hooks around each call (the hook step of the chain).

Placed below validation and above the policy: a ``before_call`` hook sees validated arguments
and may answer the call itself (nothing below runs) or replace the arguments, which are then
validated again and decided by the policy like any others; an ``after_call`` hook sees the
result and may replace it. Tools no hook selects pass straight through. A script's sub-calls
enter the chain at its top and pass here like any call; the hooks skip their own sub-calls.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from toolsets.abstract import Toolset
from toolsets.context import CallContext
from toolsets.errors import ArgumentsInvalid
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef
from toolsets.validated import SchemaValidators
from toolsets.wrapper import WrapperToolset

__all__ = ["BeforeCall", "CallHooks", "HookedToolset"]


@dataclass(frozen=True, slots=True)
class BeforeCall:
    """What the ``before_call`` hooks made of a call: new ``args``, or a ``result`` that answers
    it (then nothing below runs); neither: go on unchanged."""

    args: Mapping[str, Any] | None = None
    result: ToolResult | None = None


class CallHooks(Protocol):
    """The configured hooks (the gateway's `gateway.scripts.hooks.ScriptHooks`)."""

    def selects(self, tool: ToolDef) -> bool:
        """Whether any hook runs around calls of ``tool``."""
        ...

    async def before(self, tool: ToolDef, args: Mapping[str, Any], ctx: CallContext) -> BeforeCall:
        """Run the ``before_call`` hooks, in order."""
        ...

    async def after(
        self, tool: ToolDef, args: Mapping[str, Any], result: ToolResult, ctx: CallContext
    ) -> ToolResult:
        """Run the ``after_call`` hooks, in order; the result the caller gets."""
        ...


class HookedToolset(WrapperToolset):
    """Runs ``hooks`` around the calls of the tools they select."""

    def __init__(self, wrapped: Toolset, hooks: CallHooks, validators: SchemaValidators) -> None:
        super().__init__(wrapped)
        self.hooks = hooks
        self.validators = validators

    async def call_tool(
        self, name: str, args: Mapping[str, Any], ctx: CallContext, tool: ToolDef
    ) -> ToolResult:
        if not self.hooks.selects(tool):
            return await self.wrapped.call_tool(name, args, ctx, tool)
        before = await self.hooks.before(tool, args, ctx)
        if before.result is not None:
            return before.result
        if before.args is not None:
            try:
                self.validators.check(tool, before.args)
            except ArgumentsInvalid as exc:
                return ToolResult.error(f"A before_call hook's arguments are invalid: {exc}")
            args = before.args
        result = await self.wrapped.call_tool(name, args, ctx, tool)
        return await self.hooks.after(tool, args, result, ctx)
