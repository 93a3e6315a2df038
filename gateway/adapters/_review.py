"""A gateway call whose hold is reviewed through LangGraph's ``interrupt()``.

Inside a graph, the call is made without waiting (``max_hold=0``). When the gateway holds it for
approval, the reviewer is asked with an interrupt request (`gateway.approvals.human_interrupt`);
LangGraph pauses the graph there and, on ``Command(resume=...)``, re-runs the node, so this flow
runs again from the top:

1. the same call is re-issued; if anyone decided it meanwhile (the approvals page, the CLI, the
   REST API), the gateway answers with that outcome and the reviewer is not asked;
2. otherwise ``interrupt()`` returns the reviewer's response, which is applied to the gateway's
   pending call as a decision (an edit is re-validated and re-evaluated by the gateway; a refused
   response is asked again, with the reason in the description);
3. the call is re-issued once more and the gateway answers with its outcome: the result of the
   approved (or edited) call, run exactly once, the reviewer's text, or the denial.

Under `gateway.adapters.middleware.LockgateMiddleware` a held call is not asked here: the
middleware sets `DEFERRED` around each tool call, `call_deferred` notes the held call there and
answers "pending", and the middleware asks about all the held calls of the turn at once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from gateway.adapters._client import (
    CannotDecide,
    DecisionRejected,
    GatewayClient,
    HeldCall,
    HostDecision,
    held_of,
    result_text,
)
from gateway.adapters._turn_order import Turn, misdirected
from gateway.approvals.errors import InvalidHumanResponse
from gateway.approvals.human_interrupt import read_response
from toolsets.result import ToolResult

__all__ = ["DEFERRED", "Ask", "Deferred", "call_deferred", "call_reviewed"]

Ask = Callable[[dict[str, Any]], Any]
"""Asks the reviewer: LangGraph's ``interrupt`` (raises to pause, returns the resume value)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Deferred:
    """A held call left for the review of its model turn.

    Attributes:
        held: The gateway's pending call.
        name: The tool called.
        args: The arguments as called.
    """

    held: HeldCall
    name: str
    args: dict[str, Any]


DEFERRED: ContextVar[list[Deferred] | None] = ContextVar("lockgate_deferred", default=None)
"""Where a tool call notes its held call instead of asking (set by the lockgate middleware)."""


async def call_deferred(
    client: GatewayClient, name: str, args: Mapping[str, Any], sink: list[Deferred]
) -> ToolResult:
    """The outcome of calling ``name`` without waiting; a held approval is noted in ``sink``
    (and answered "pending") for the turn's review."""
    result = await client.call_tool(name, args, max_hold=0)
    held = held_of(result)
    if held is not None and held.kind == "approval":
        sink.append(Deferred(held=held, name=name, args=dict(args)))
    return result


async def call_reviewed(
    client: GatewayClient,
    name: str,
    args: Mapping[str, Any],
    ask: Ask | None,
    turn: Turn | None = None,
) -> ToolResult:
    """The outcome of calling ``name``; with ``ask``, a held approval is put to the reviewer
    (in its ``turn`` among the held calls of its ``ToolNode`` task, see `_turn_order`)."""
    if ask is None:
        return await client.call_tool(name, args)
    turn = turn or Turn(None, None)
    try:
        if (earlier := turn.recalled()) is not None:  # ran in an earlier run of the node
            return earlier
        result = await client.call_tool(name, args, max_hold=0)
        held = held_of(result)
        if held is None or held.kind != "approval":
            return turn.remember(result)
        await turn.wait()
        return turn.remember(
            await _put_to_reviewer(client, name, args, result=result, held=held, ask=ask, turn=turn)
        )
    finally:
        turn.finish()


async def _put_to_reviewer(
    client: GatewayClient,
    name: str,
    args: Mapping[str, Any],
    *,
    result: ToolResult,
    held: HeldCall,
    ask: Ask,
    turn: Turn,
) -> ToolResult:
    note: str | None = None
    while True:
        request = await client.interrupt_request(held, name, args, note=note)
        reply, answered = turn.ask(ask, request)
        if (note := misdirected(reply, answered, held.id)) is not None:
            continue  # a reply to another call's request: never applied here
        try:
            answer = read_response(reply, action=name)
            decision = HostDecision(kind=answer.decision, message=answer.message, args=answer.args)
            await client.decide(held.id, decision)
        except (InvalidHumanResponse, DecisionRejected) as exc:
            note = str(exc)
            continue
        except CannotDecide as exc:
            text = f"{result_text(result)} This host may not decide it ({exc})."
            return ToolResult.error(text, meta=result.meta)
        return await client.call_tool(name, args)
