"""`human_in_the_loop` and `human_in_the_loop_async`: a human review step on any tool function.

Decorate a plain function (or a LangChain tool) to get a LangChain tool that, inside a LangGraph
node, pauses the graph with ``interrupt()`` before each run::

    @human_in_the_loop
    def delete_file(path: str) -> str: ...

    @human_in_the_loop_async(handler=my_handler, gateway=gw, principal=Principal(id="agent:a"))
    async def send_mail(to: str, body: str) -> str: ...

The request is LangGraph's human-in-the-loop shape (``action_request``, ``config`` allowing
accept, edit and respond, ``description``). The default handler reads the response (the
``HumanResponse`` shape or a ``HumanInTheLoopMiddleware`` decision, see
`gateway.approvals.human_interrupt`): ``accept`` runs the tool, ``edit`` runs it with the edited
arguments, ``response`` returns the reviewer's text; anything else raises an
`InvalidHumanResponse` naming the type. A custom ``handler`` receives
``{tool_call_name, tool_call_args, tool}`` and returns the tool's result.

With ``gateway=`` (a running in-process `gateway.Gateway`), each review of the default handler
is also a pending call in the gateway's store (see `gateway.adapters._local_review`): audited,
evented, shown on the approvals page, where an approver may decide it before the graph resumes.
The sync decorator then needs ``portal=``, the blocking portal of the gateway's event loop.
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Callable
from typing import Any, TypedDict, overload

import anyio
import anyio.to_thread
from anyio.from_thread import BlockingPortal
from langchain_core.tools import BaseTool, ToolException
from langchain_core.tools import tool as create_tool
from langchain_core.utils.function_calling import convert_to_json_schema

from gateway.adapters._langgraph_compat import interrupt
from gateway.adapters._local_review import Ledger, Plan, Refused, Run, Say, plan_of_record
from gateway.adapters._review import Ask
from gateway.approvals.errors import DecisionRefused, InvalidHumanResponse
from gateway.approvals.human_interrupt import (
    ReviewAnswer,
    interrupt_config,
    noted,
    read_response,
)
from gateway.approvals.pending import PendingCall
from gateway.gateway import Gateway
from toolsets.context import ANONYMOUS, Principal

__all__ = [
    "AsyncHumanInterruptHandler",
    "HumanInterruptHandler",
    "InterruptParams",
    "human_in_the_loop",
    "human_in_the_loop_async",
]


class InterruptParams(TypedDict):
    """What a handler receives: the call to review and the tool that would run it."""

    tool_call_name: str
    tool_call_args: dict[str, Any]
    tool: BaseTool


HumanInterruptHandler = Callable[[InterruptParams], Any]
AsyncHumanInterruptHandler = Callable[[InterruptParams], Awaitable[Any]]
Function = Callable[..., Any] | BaseTool
Runner = Callable[[dict[str, Any]], Awaitable[Any]]
OFFERED = ("approve", "edit", "respond")


def review_request(
    params: InterruptParams, call: PendingCall | None, note: str | None = None
) -> dict[str, Any]:
    """The interrupt request of the default handler (with the gateway record's id, if any, and
    why the last response was refused)."""
    name = params["tool_call_name"]
    request: dict[str, Any] = {
        "action_request": {"action": name, "args": params["tool_call_args"]},
        "config": interrupt_config(OFFERED),
        "description": f"Please review tool call: {name}",
    }
    if call is not None:
        request["description"] += f" (approval {call.id})"
        request["lockgate"] = {"approval_id": call.id}
    return noted(request, note)


def _answer(response: Any, params: InterruptParams) -> ReviewAnswer:
    answer = read_response(response, action=params["tool_call_name"])
    if answer.decision not in OFFERED:
        raise InvalidHumanResponse(f"unsupported response type {answer.given!r}")
    return answer


def _plan(answer: ReviewAnswer, params: InterruptParams) -> Plan:
    if answer.decision == "respond":
        return Say(answer.message or "")
    return Run(answer.args if answer.args is not None else params["tool_call_args"])


async def _review(params: InterruptParams, ledger: Ledger | None, ask: Ask, run: Runner) -> Any:
    """The default handler: ask (unless the gateway record is decided already), then act."""
    call = None if ledger is None else await ledger.open(params["tool_call_args"])
    plan = None if call is None else plan_of_record(call)
    note: str | None = None
    while plan is None:
        answer = _answer(ask(review_request(params, call, note)), params)
        if ledger is None or call is None:
            plan = _plan(answer, params)
            break
        try:
            call = await ledger.decide(call, answer)
        except DecisionRefused as exc:  # an edit the schema refuses: ask again, saying why
            note = str(exc)
            continue
        plan = plan_of_record(call) or Refused(f"Call {call.id} is still undecided.")
    if not isinstance(plan, Run):
        return _said(plan)
    if ledger is None or call is None:
        return await run(plan.args)
    return await ledger.run(call, plan.args, run)


def _said(plan: Say | Refused) -> str:
    if isinstance(plan, Refused):
        raise ToolException(plan.message)
    return plan.text


def _ledger(tool: BaseTool, gateway: Gateway | None, principal: Principal) -> Ledger | None:
    if gateway is None:
        return None
    schema = tool.tool_call_schema
    json_schema = schema if isinstance(schema, dict) else convert_to_json_schema(schema)
    return Ledger.of(gateway, principal, tool.name, tool.description, json_schema)


def _as_tool(function: Function) -> BaseTool:
    return function if isinstance(function, BaseTool) else create_tool(function)


def _sync_default(ledger: Ledger | None, portal: BlockingPortal | None) -> HumanInterruptHandler:
    if ledger is not None and portal is None:
        raise ValueError("human_in_the_loop(gateway=...) needs portal=: the gateway's loop")

    def handler(params: InterruptParams) -> Any:
        # interrupt() and the tool read this thread's LangGraph context, wherever they run.
        context = contextvars.copy_context()

        def ask(request: dict[str, Any]) -> Any:
            return context.run(interrupt, request)

        async def run(args: dict[str, Any]) -> Any:
            return await anyio.to_thread.run_sync(context.run, params["tool"].invoke, args)

        if portal is None:  # nothing to record: no event loop needed
            plan = _plan(_answer(interrupt(review_request(params, None)), params), params)
            return params["tool"].invoke(plan.args) if isinstance(plan, Run) else _said(plan)
        return portal.call(_review, params, ledger, ask, run)

    return handler


def _async_default(ledger: Ledger | None) -> AsyncHumanInterruptHandler:
    async def handler(params: InterruptParams) -> Any:
        return await _review(params, ledger, interrupt, params["tool"].ainvoke)

    return handler


def _params(tool: BaseTool, args: dict[str, Any]) -> InterruptParams:
    return InterruptParams(tool_call_name=tool.name, tool_call_args=args, tool=tool)


@overload
def human_in_the_loop(func: Function) -> BaseTool: ...


@overload
def human_in_the_loop(
    *,
    handler: HumanInterruptHandler | None = None,
    gateway: Gateway | None = None,
    principal: Principal = ANONYMOUS,
    portal: BlockingPortal | None = None,
) -> Callable[[Function], BaseTool]: ...


def human_in_the_loop(
    func: Function | None = None,
    *,
    handler: HumanInterruptHandler | None = None,
    gateway: Gateway | None = None,
    principal: Principal = ANONYMOUS,
    portal: BlockingPortal | None = None,
) -> BaseTool | Callable[[Function], BaseTool]:
    """Add a human review step to a sync tool function (see the module docs).

    Args:
        func: The function (or LangChain tool) to review.
        handler: Reviews a call and returns the tool's result (default: ask with
            ``interrupt()``; accept, edit, response).
        gateway: Record each review as a pending call in this in-process gateway.
        principal: Who the recorded calls belong to.
        portal: The blocking portal of the gateway's event loop (needed with ``gateway``).
    """

    def decorate(function: Function) -> BaseTool:
        tool = _as_tool(function)
        review = handler or _sync_default(_ledger(tool, gateway, principal), portal)

        def reviewed(**args: Any) -> Any:
            return review(_params(tool, args))

        return _reviewed_tool(tool, reviewed)

    return decorate if func is None else decorate(func)


@overload
def human_in_the_loop_async(func: Function) -> BaseTool: ...


@overload
def human_in_the_loop_async(
    *,
    handler: AsyncHumanInterruptHandler | None = None,
    gateway: Gateway | None = None,
    principal: Principal = ANONYMOUS,
) -> Callable[[Function], BaseTool]: ...


def human_in_the_loop_async(
    func: Function | None = None,
    *,
    handler: AsyncHumanInterruptHandler | None = None,
    gateway: Gateway | None = None,
    principal: Principal = ANONYMOUS,
) -> BaseTool | Callable[[Function], BaseTool]:
    """Add a human review step to an async tool function (see the module docs).

    Args:
        func: The async function (or LangChain tool) to review.
        handler: An async handler reviewing a call and returning the tool's result.
        gateway: Record each review as a pending call in this in-process gateway.
        principal: Who the recorded calls belong to.
    """

    def decorate(function: Function) -> BaseTool:
        tool = _as_tool(function)
        review = handler or _async_default(_ledger(tool, gateway, principal))

        async def reviewed(**args: Any) -> Any:
            return await review(_params(tool, args))

        return _reviewed_tool(tool, reviewed)

    return decorate if func is None else decorate(func)


def _reviewed_tool(tool: BaseTool, reviewed: Callable[..., Any]) -> BaseTool:
    made = create_tool(tool.name, description=tool.description, args_schema=tool.args_schema)(
        reviewed
    )
    made.handle_tool_error = True  # denials reach the model as the tool's error text
    return made
