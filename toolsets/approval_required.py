"""`ApprovalRequiredToolset`: held and deferred calls wait for their outcome before they run."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol

import anyio

from toolsets.abstract import Toolset
from toolsets.context import CallContext
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef
from toolsets.wrapper import WrapperToolset

__all__ = ["ApprovalGate", "ApprovalRequiredToolset", "Approved", "Granted"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Approved:
    """A held call that was approved and claimed: it runs now, once, with these arguments.

    Attributes:
        id: The pending call's id.
        args: The arguments to run with (the stored copy, or an approver's edit).
        call_id: The id of the call that was held (the run's events carry it).
    """

    id: str
    args: Mapping[str, Any]
    call_id: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Granted:
    """A held call that a standing grant covers: it runs now, without asking.

    Attributes:
        grant_id: The grant; the call's decision (and so its events) names it.
    """

    grant_id: str


class ApprovalGate(Protocol):
    """Where held calls wait (the gateway's approval service implements it)."""

    async def hold(
        self, tool: ToolDef, args: Mapping[str, Any], ctx: CallContext
    ) -> ToolResult | Approved | Granted:
        """Create (or find the re-issued) pending call, wait for its outcome up to the hold.

        Returns the answer for the caller (pending, denied, expired, a worker's or an earlier
        run's result), `Approved` when the call must run now (it is already ``executing``),
        or `Granted` when a standing grant lets it run without asking (nothing was held).
        """
        ...

    async def finished(self, approved: Approved, result: ToolResult) -> None:
        """Record the outcome of an approved run."""
        ...

    async def failed(self, approved: Approved, error: BaseException) -> None:
        """Record that an approved run raised (or was cancelled)."""
        ...


_HELD = frozenset({"ask", "defer"})
"""The effects the gate holds a call for."""


class ApprovalRequiredToolset(WrapperToolset):
    """Calls whose decision is ``ask`` or ``defer`` go through ``gate``; approved ones run below.

    An approved call runs through the rest of this chain (events, upstream), like any other.
    """

    def __init__(self, wrapped: Toolset, gate: ApprovalGate) -> None:
        super().__init__(wrapped)
        self.gate = gate

    def passes_through(self, ctx: CallContext) -> bool:
        """Whether the call is handed on untouched: its decision is neither ask nor defer."""
        return ctx.decision is None or ctx.decision.effect not in _HELD

    async def call_tool(
        self, name: str, args: Mapping[str, Any], ctx: CallContext, tool: ToolDef
    ) -> ToolResult:
        decision = ctx.decision
        if decision is None or self.passes_through(ctx):
            return await self.wrapped.call_tool(name, args, ctx, tool)
        outcome = await self.gate.hold(tool, args, ctx)
        if isinstance(outcome, ToolResult):
            return outcome
        if isinstance(outcome, Granted):
            granted = replace(ctx, decision=replace(decision, grant=outcome.grant_id))
            return await self.wrapped.call_tool(name, args, granted, tool)
        run = replace(ctx, call_id=outcome.call_id)
        try:
            result = await self.wrapped.call_tool(name, outcome.args, run, tool)
        except BaseException as exc:
            with anyio.CancelScope(shield=True):
                await self.gate.failed(outcome, exc)
            raise
        await self.gate.finished(outcome, result)
        return result
