"""`LockgateMiddleware`: a LangChain 1.x agent's held calls, reviewed once per model turn.

Install with ``pip install 'lockgate[langchain]'``. Give ``create_agent`` the toolkit's tools and
this middleware::

    async with GatewayToolkit.from_url(url, token=TOKEN) as toolkit:
        agent = create_agent(
            model,
            tools=await toolkit.aget_tools(),
            middleware=[LockgateMiddleware(toolkit)],
            checkpointer=InMemorySaver(),
        )

The gateway's policy decides which calls need review: each tool call of a turn goes to the
gateway as it would without the middleware, so an allowed call runs, a denied one is refused,
and a held one becomes a pending call on record (audited, evented, on the approvals page, in
the CLI and the REST API) without waiting. Then, before the model runs again, the agent pauses
once with ``interrupt()`` for all the turn's held calls, in ``HumanInTheLoopMiddleware``'s
request shape (`gateway.approvals.human_interrupt.turn_request`)::

    {"action_requests": [{"name", "args", "description"}, ...],
     "review_configs": [{"action_name", "allowed_decisions": ["approve", "edit", "reject",
                                                              "respond"]}, ...],
     "lockgate": [{"approval_id": "ap_...", ...}, ...]}

``allowed_decisions`` follow each rule's ``decisions``. Resume with
``Command(resume={"decisions": [...]})``, one decision per action request, in order: ``approve``,
``edit`` (``edited_action: {"name", "args"}``; the gateway re-validates and re-evaluates the
arguments), ``reject`` (``message`` for the model) or ``respond`` (``message`` is the result).
Each is applied to its pending call as the host's decision (`gateway.adapters._client`); a
decision the gateway refuses is asked again, alone, with the reason in its description. The
calls' outcomes (the result of an approved call, run exactly once; the denial; the response)
replace their "pending" tool messages, and the model reads them. A call decided elsewhere
meanwhile keeps the decision on record first.

Why not LangChain's own ``HumanInTheLoopMiddleware``: it decides by tool name in the graph, before
the gateway sees the call, so its pauses are not the gateway's held calls: not on record, not
on the page, and blind to the policy's conditions (arguments, session, labels). Here the policy
decides, and the review is of the gateway's pending calls.

A graph built without ``create_agent`` uses the same object: `LockgateMiddleware.tool_node`
is a LangGraph ``ToolNode`` with these hooks (``wrap_tool_call``), and
`LockgateMiddleware.review_node` is the node to run after it, which asks about the held calls of
the last AI message as ``before_model`` does here::

    review = LockgateMiddleware(toolkit)
    builder.add_node("tools", review.tool_node(await toolkit.aget_tools()))
    builder.add_node("review", review.review_node())
    builder.add_edge("tools", "review")

One toolkit per middleware: held calls of other tools (not of this toolkit) are not reviewed.
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain.agents.middleware import AgentMiddleware, AgentState, ToolCallRequest
from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import BaseTool
from langgraph.prebuilt import ToolNode
from langgraph.runtime import Runtime
from langgraph.types import Command

from gateway.adapters._client import (
    CannotDecide,
    DecisionRejected,
    HeldCall,
    HostDecision,
    result_text,
)
from gateway.adapters._langgraph_compat import interrupt
from gateway.adapters._review import DEFERRED, Ask, Deferred
from gateway.adapters.langchain import GatewayToolkit
from gateway.approvals.errors import InvalidHumanResponse
from gateway.approvals.human_interrupt import read_decisions, read_response, turn_request
from toolsets.errors import ToolNotFoundError

__all__ = ["HELD_ARTIFACT", "LockgateMiddleware"]

HELD_ARTIFACT = "lockgate_held"
"""The artifact key of a tool message standing for a held call until the turn's review."""

Outcome = ToolMessage | Command[Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class _Held:
    """A held call of the turn: the tool message standing for it, and the call."""

    message: ToolMessage
    approval_id: str
    name: str
    args: dict[str, Any]


class LockgateMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """Reviews the gateway's held calls of each model turn at once (see the module docs).

    Args:
        toolkit: The open `GatewayToolkit` whose tools the agent calls; its credentials decide
            (``approver=`` or ``approver_token=``; without one, only rules naming ``caller``).
    """

    def __init__(self, toolkit: GatewayToolkit) -> None:
        super().__init__()
        self.toolkit = toolkit

    def wrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Outcome]
    ) -> Outcome:
        """Run the call; a call the gateway holds is noted for the turn's review."""
        deferred: list[Deferred] = []
        token = DEFERRED.set(deferred)
        try:
            outcome = handler(request)
        finally:
            DEFERRED.reset(token)
        return _marked(outcome, deferred)

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[Outcome]]
    ) -> Outcome:
        """Async `wrap_tool_call`."""
        deferred: list[Deferred] = []
        token = DEFERRED.set(deferred)
        try:
            outcome = await handler(request)
        finally:
            DEFERRED.reset(token)
        return _marked(outcome, deferred)

    def before_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Ask about the last turn's held calls (sync agents: through the toolkit's portal)."""
        return self.review_turn(state)

    async def abefore_model(
        self, state: AgentState[Any], runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """Ask about the last turn's held calls, in one interrupt."""
        return await self.areview_turn(state)

    def tool_node(self, tools: Sequence[BaseTool]) -> ToolNode:
        """A LangGraph ``ToolNode`` running ``tools`` whose held calls are left for the turn's
        review (follow it with `review_node`), for graphs built without ``create_agent``."""
        return ToolNode(
            list(tools), wrap_tool_call=self.wrap_tool_call, awrap_tool_call=self.awrap_tool_call
        )

    def review_node(self) -> RunnableLambda[Any, dict[str, Any] | None]:
        """The graph node after a `tool_node`: one interrupt for all the held calls of the last
        AI message, then their outcomes in place of their "pending" tool messages."""
        return RunnableLambda(self.review_turn, afunc=self.areview_turn, name="lockgate_review")

    def review_turn(self, state: Mapping[str, Any]) -> dict[str, Any] | None:
        """`areview_turn` for sync graphs (through the toolkit's portal)."""
        held = _held_of_turn(state["messages"])
        if not held:
            return None
        # interrupt() reads this thread's LangGraph context; the review runs in the portal.
        context = contextvars.copy_context()

        def ask(request: dict[str, Any]) -> Any:
            return context.run(interrupt, request)

        return self.toolkit.blocking(self._review(held, ask))

    async def areview_turn(self, state: Mapping[str, Any]) -> dict[str, Any] | None:
        """Ask about the held calls of the state's last AI message in one interrupt; their
        outcomes as tool messages replacing theirs (None when none is held)."""
        held = _held_of_turn(state["messages"])
        return await self._review(held, interrupt) if held else None

    async def _review(self, held: Sequence[_Held], ask: Ask) -> dict[str, Any]:
        """Decide the held calls with the reviewer's reply; their outcomes as tool messages."""
        cannot = await self._decide_all(held, ask)
        return {"messages": [await self._outcome(h, cannot.get(h.approval_id)) for h in held]}

    async def _decide_all(self, held: Sequence[_Held], ask: Ask) -> dict[str, str]:
        """Ask until every held call is decided or found undecidable by this host; why the
        host may not decide, by approval id."""
        notes: dict[str, str] = {}
        cannot: dict[str, str] = {}
        waiting = list(held)
        while waiting:
            requests = [await self._request(h, notes.get(h.approval_id)) for h in waiting]
            try:
                decisions = read_decisions(ask(turn_request(requests)), count=len(waiting))
            except InvalidHumanResponse as exc:
                notes = {h.approval_id: str(exc) for h in waiting}
                continue
            refused: list[_Held] = []
            for call, decision in zip(waiting, decisions, strict=True):
                try:
                    await self._decide(call, decision)
                except (InvalidHumanResponse, DecisionRejected) as exc:
                    notes[call.approval_id] = str(exc)
                    refused.append(call)
                except CannotDecide as exc:
                    cannot[call.approval_id] = str(exc)
            waiting = refused
        return cannot

    async def _request(self, call: _Held, note: str | None) -> dict[str, Any]:
        held = HeldCall(id=call.approval_id, kind="approval")
        return await self.toolkit.client.interrupt_request(held, call.name, call.args, note=note)

    async def _decide(self, call: _Held, decision: Any) -> None:
        answer = read_response(decision, action=call.name)
        host = HostDecision(kind=answer.decision, message=answer.message, args=answer.args)
        await self.toolkit.client.decide(call.approval_id, host)

    async def _outcome(self, call: _Held, cannot: str | None) -> ToolMessage:
        """The call's outcome, re-issued (decided: the gateway answers with its outcome)."""
        if cannot is not None:
            text = f"{call.message.content} This host may not decide it ({cannot})."
            return _replaced(call.message, text, None, error=True)
        try:
            result = await self.toolkit.client.call_tool(call.name, call.args, max_hold=0)
        except ToolNotFoundError as exc:  # hidden or removed since it was held
            return _replaced(call.message, str(exc), None, error=True)
        text, artifact = result_text(result), result.structured_content
        return _replaced(call.message, text, artifact, error=result.is_error)


def _marked(outcome: Outcome, deferred: Sequence[Deferred]) -> Outcome:
    """The tool message of a held call, marked for the turn's review."""
    if not deferred or not isinstance(outcome, ToolMessage):
        return outcome
    call = deferred[-1]
    held = {"approval_id": call.held.id, "name": call.name, "args": call.args}
    return outcome.model_copy(update={"artifact": {HELD_ARTIFACT: held}})


def _held_of_turn(messages: Sequence[AnyMessage]) -> list[_Held]:
    """The held calls of the last model turn still waiting for review, in call order."""
    last = max((i for i, m in enumerate(messages) if isinstance(m, AIMessage)), default=None)
    if last is None:
        return []
    held: list[_Held] = []
    for message in messages[last + 1 :]:
        artifact = message.artifact if isinstance(message, ToolMessage) else None
        mark = artifact.get(HELD_ARTIFACT) if isinstance(artifact, Mapping) else None
        if isinstance(mark, Mapping) and isinstance(message, ToolMessage):
            held.append(
                _Held(
                    message=message,
                    approval_id=str(mark["approval_id"]),
                    name=str(mark["name"]),
                    args=dict(mark["args"]),
                )
            )
    return held


def _replaced(message: ToolMessage, content: str, artifact: Any, *, error: bool) -> ToolMessage:
    """A tool message replacing ``message`` in the state (same id)."""
    return ToolMessage(
        content=content,
        artifact=artifact,
        status="error" if error else "success",
        tool_call_id=message.tool_call_id,
        name=message.name,
        id=message.id,
    )
