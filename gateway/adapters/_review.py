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
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from gateway.adapters._client import (
    CannotDecide,
    DecisionRejected,
    GatewayClient,
    HostDecision,
    held_of,
    result_text,
)
from gateway.approvals.errors import InvalidHumanResponse
from gateway.approvals.human_interrupt import read_response
from toolsets.result import ToolResult

__all__ = ["Ask", "call_reviewed"]

Ask = Callable[[dict[str, Any]], Any]
"""Asks the reviewer: LangGraph's ``interrupt`` (raises to pause, returns the resume value)."""


async def call_reviewed(
    client: GatewayClient, name: str, args: Mapping[str, Any], ask: Ask | None
) -> ToolResult:
    """The outcome of calling ``name``; with ``ask``, a held approval is put to the reviewer."""
    if ask is None:
        return await client.call_tool(name, args)
    result = await client.call_tool(name, args, max_hold=0)
    held = held_of(result)
    if held is None or held.kind != "approval":
        return result
    note: str | None = None
    while True:
        request = await client.interrupt_request(held, name, args, note=note)
        try:
            answer = read_response(ask(request), action=name)
            decision = HostDecision(kind=answer.decision, message=answer.message, args=answer.args)
            await client.decide(held.id, decision)
        except (InvalidHumanResponse, DecisionRejected) as exc:
            note = str(exc)
            continue
        except CannotDecide as exc:
            text = f"{result_text(result)} This host may not decide it ({exc})."
            return ToolResult.error(text, meta=result.meta)
        return await client.call_tool(name, args)
