"""`PolicyToolset`: the policy's decision for each call; denied and hidden calls stop here."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Protocol

from toolsets.abstract import Toolset
from toolsets.context import CallContext
from toolsets.decision import Decision
from toolsets.errors import CallRefused, ToolNotFoundError, UpstreamError
from toolsets.refusal import Refusal
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef
from toolsets.wrapper import WrapperToolset

__all__ = ["Decider", "PolicyToolset", "Refuser"]


class Decider(Protocol):
    """The policy as the chain sees it (the gateway's `PolicyDecider` implements it)."""

    def decide(self, tool: ToolDef, args: Mapping[str, Any], ctx: CallContext) -> Decision:
        """The decision for this call; reads the session's history, does not change it."""
        ...

    def record(self, tool: ToolDef, args: Mapping[str, Any], ctx: CallContext, ok: bool) -> None:
        """Count an answered call in its session (what later decisions read as ``session``);
        ``ok``: its result was not an error."""
        ...


class Refuser(Protocol):
    """Puts a refusal on record (``tool.denied``) and returns the error result the model reads.

    ``message`` is the sentence the model reads (a policy refusal: its kind follows from
    ``ctx.decision``) or a `Refusal` saying why and what would unblock it.

    Raises when the refusal cannot be recorded: the call fails closed.
    """

    async def __call__(
        self, tool: ToolDef, args: Mapping[str, Any], ctx: CallContext, message: str | Refusal
    ) -> ToolResult: ...


class PolicyToolset(WrapperToolset):
    """Decides each call; passes allowed, held and deferred calls on with ``ctx.decision`` set.

    ``hide`` answers as an unknown tool; ``deny`` answers with the rule's message, on record.
    """

    def __init__(self, wrapped: Toolset, decider: Decider, refuse: Refuser) -> None:
        super().__init__(wrapped)
        self.decider = decider
        self.refuse = refuse

    async def call_tool(
        self, name: str, args: Mapping[str, Any], ctx: CallContext, tool: ToolDef
    ) -> ToolResult:
        decision = self.decider.decide(tool, args, ctx)
        if decision.effect == "hide":
            raise ToolNotFoundError(name)
        ctx = replace(ctx, decision=decision)
        if decision.effect == "deny":
            message = decision.message or f"Denied by policy: {decision.reason}"
            return await self.refuse(tool, args, ctx, message)
        try:
            result = await self.wrapped.call_tool(name, args, ctx, tool)
        except CallRefused as refused:
            return refused.result  # refused below (a rate limit): never ran, so not counted
        except UpstreamError:
            self.decider.record(tool, args, ctx, ok=False)  # answered, as an error the model reads
            raise
        self.decider.record(tool, args, ctx, ok=not result.is_error)
        return result
