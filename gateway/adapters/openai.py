"""OpenAI function calling through the gateway: tool schemas, and running the model's tool calls.

Install with ``pip install 'lockgate[openai]'``. A host loop lists the gateway's tools once,
passes `chat_tools` (Chat Completions) or `responses_tools` (Responses API) to the model, and
hands each assistant turn's tool calls to `run_tool_calls` (``message.tool_calls``) or
`run_responses_calls` (``function_call`` output items). The calls run concurrently through the
gateway; the outcome holds the ``tool`` messages (or ``function_call_output`` items) to append
and the calls the gateway holds for approval or an external worker, as `PendingApproval`.

Send the next request only once every call has an answer: decide the pending calls (or let the
gateway's approvers decide) and call `complete_pending`, which posts the host's decisions,
re-issues the held calls and returns their messages. The gateway executes each approved call
exactly once; an edited call runs the edited arguments.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import anyio
from openai.types.chat import ChatCompletionFunctionToolParam
from openai.types.responses import FunctionToolParam

from gateway.adapters._client import (
    CannotDecide,
    DecisionRejected,
    GatewayClient,
    HostDecision,
    InProcessGateway,
    held_of,
    result_text,
)
from gateway.adapters._remote import RemoteGateway
from toolsets.errors import ToolNotFoundError
from toolsets.result import ToolResult
from toolsets.tooldef import TOOL_NAME_RE, ToolDef

__all__ = [
    "CannotDecide",
    "DecisionRejected",
    "HostDecision",
    "InProcessGateway",
    "PendingApproval",
    "RemoteGateway",
    "ToolCallsOutcome",
    "chat_tools",
    "complete_pending",
    "responses_tools",
    "run_responses_calls",
    "run_tool_calls",
]

Api = Literal["chat", "responses"]
TASK_WAIT = 50.0
"""Seconds `complete_pending` waits for a held call's task to end (a rule's default hold)."""
ToolDefs = Iterable[ToolDef] | Mapping[str, ToolDef]


@dataclass(frozen=True, slots=True, kw_only=True)
class PendingApproval:
    """A tool call the gateway holds: waiting for a decision (``approval``) or a worker.

    Attributes:
        tool_call_id: The model's tool call id (``call_id`` in the Responses API).
        approval_id: The gateway's pending-call id.
        kind: ``approval`` or ``external``.
        tool: The tool name.
        args: The arguments as the model sent them (re-issued unchanged).
        rule_id: The policy rule that held the call, when the host may read it.
        reason: Why the call is held, when the host may read it.
        api: Which API the answer is for: ``chat`` or ``responses``.
        note: Why the host's decision was not applied, when it was not.
        task_id: The task that follows the held call (``InProcessGateway(as_task=True)``):
            `complete_pending` reads its outcome instead of re-issuing the call.
    """

    tool_call_id: str
    approval_id: str
    kind: Literal["approval", "external"]
    tool: str
    args: dict[str, Any]
    rule_id: str | None = None
    reason: str | None = None
    api: Api = "chat"
    note: str | None = None
    task_id: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallsOutcome:
    """What running a batch of tool calls produced.

    Attributes:
        messages: ``tool`` messages (Chat) or ``function_call_output`` items (Responses) to
            append, in the order of the calls.
        pending: The calls still held by the gateway; they have no message yet.
    """

    messages: list[dict[str, Any]] = field(default_factory=list)
    pending: list[PendingApproval] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """True when every call has its message (nothing is pending)."""
        return not self.pending


@dataclass(frozen=True, slots=True)
class _Call:
    id: str
    name: str
    args: dict[str, Any] | None
    problem: str | None = None


def _function(tool: ToolDef) -> tuple[str, str, dict[str, Any]]:
    if not TOOL_NAME_RE.fullmatch(tool.name):
        raise ValueError(f"tool name {tool.name!r} is not a valid OpenAI function name")
    return tool.name, tool.description or "", dict(tool.input_schema)


def _defs(tools: ToolDefs) -> list[ToolDef]:
    return list(tools.values()) if isinstance(tools, Mapping) else list(tools)


def chat_tools(
    tools: ToolDefs, *, strict: bool | None = None
) -> list[ChatCompletionFunctionToolParam]:
    """Chat Completions ``tools``: ``{"type": "function", "function": {...}}`` per tool.

    Raises:
        ValueError: a tool name is not ``[A-Za-z0-9_-]{1,64}``.
    """
    out: list[ChatCompletionFunctionToolParam] = []
    for name, description, parameters in map(_function, _defs(tools)):
        function: Any = {"name": name, "description": description, "parameters": parameters}
        if strict is not None:
            function["strict"] = strict
        out.append({"type": "function", "function": function})
    return out


def responses_tools(tools: ToolDefs, *, strict: bool = False) -> list[FunctionToolParam]:
    """Responses API ``tools``: flat ``{"type": "function", "name", ...}`` per tool.

    ``strict`` defaults to False: MCP input schemas rarely meet strict mode's rules.

    Raises:
        ValueError: a tool name is not ``[A-Za-z0-9_-]{1,64}``.
    """
    return [
        {
            "type": "function",
            "name": name,
            "description": description,
            "parameters": parameters,
            "strict": strict,
        }
        for name, description, parameters in map(_function, _defs(tools))
    ]


def _field(item: Any, name: str) -> Any:
    return item.get(name) if isinstance(item, Mapping) else getattr(item, name, None)


def _parse_args(call_id: str, name: str, raw: Any) -> _Call:
    if isinstance(raw, Mapping):
        return _Call(call_id, name, dict(raw))
    try:
        args = json.loads(raw or "{}")
    except json.JSONDecodeError as exc:
        return _Call(call_id, name, None, f"Error: the arguments are not valid JSON ({exc.msg}).")
    if not isinstance(args, dict):
        return _Call(call_id, name, None, "Error: the arguments must be a JSON object.")
    return _Call(call_id, name, args)


def _chat_call(item: Any) -> _Call:
    call_id = str(_field(item, "id"))
    function = _field(item, "function")
    if _field(item, "type") not in (None, "function") or function is None:
        return _Call(call_id, "", None, "Error: only function tool calls are supported.")
    return _parse_args(call_id, str(_field(function, "name")), _field(function, "arguments"))


def _responses_call(item: Any) -> _Call:
    call_id = str(_field(item, "call_id"))
    return _parse_args(call_id, str(_field(item, "name")), _field(item, "arguments"))


def _message(api: Api, call_id: str, text: str) -> dict[str, Any]:
    if api == "chat":
        return {"role": "tool", "tool_call_id": call_id, "content": text}
    return {"type": "function_call_output", "call_id": call_id, "output": text}


def _text(result: ToolResult) -> str:
    text = result_text(result)
    return f"Error: {text}" if result.is_error else text


async def _answer(
    gateway: GatewayClient, api: Api, call: _Call
) -> dict[str, Any] | PendingApproval:
    if call.problem is not None or call.args is None:
        return _message(api, call.id, call.problem or "Error: no arguments.")
    try:
        result = await gateway.call_tool(call.name, call.args)
    except ToolNotFoundError as exc:
        return _message(api, call.id, f"Error: {exc}")
    held = held_of(result)
    if held is None:
        return _message(api, call.id, _text(result))
    held = await gateway.describe(held)
    return PendingApproval(
        tool_call_id=call.id,
        approval_id=held.id,
        kind=held.kind,
        tool=call.name,
        args=call.args,
        rule_id=held.rule_id,
        reason=held.reason,
        api=api,
        task_id=held.task_id,
    )


async def _run(
    gateway: GatewayClient, api: Api, calls: Sequence[_Call], limit: int
) -> ToolCallsOutcome:
    answers: list[dict[str, Any] | PendingApproval | None] = [None] * len(calls)
    limiter = anyio.CapacityLimiter(max(1, limit))

    async def one(index: int, call: _Call) -> None:
        async with limiter:
            answers[index] = await _answer(gateway, api, call)

    async with anyio.create_task_group() as tg:
        for index, call in enumerate(calls):
            tg.start_soon(one, index, call)
    outcome = ToolCallsOutcome()
    for answer in answers:
        if isinstance(answer, PendingApproval):
            outcome.pending.append(answer)
        elif answer is not None:
            outcome.messages.append(answer)
    return outcome


async def run_tool_calls(
    gateway: GatewayClient, tool_calls: Iterable[Any] | None, *, max_concurrency: int = 8
) -> ToolCallsOutcome:
    """Run a Chat Completions assistant message's ``tool_calls`` through the gateway.

    Args:
        gateway: The gateway (`InProcessGateway`, or an open `RemoteGateway`).
        tool_calls: ``message.tool_calls``: openai objects or their dict form.
        max_concurrency: How many calls run at once.

    Returns:
        The ``{"role": "tool", ...}`` messages to append after the assistant message, and the
        calls the gateway holds (see `complete_pending`).
    """
    calls = [_chat_call(item) for item in tool_calls or ()]
    return await _run(gateway, "chat", calls, max_concurrency)


async def run_responses_calls(
    gateway: GatewayClient, items: Iterable[Any], *, max_concurrency: int = 8
) -> ToolCallsOutcome:
    """Run the ``function_call`` items of a Responses API output through the gateway.

    Other item types (messages, reasoning) are skipped.

    Returns:
        The ``function_call_output`` items for the next request's input, and the held calls.
    """
    calls = [_responses_call(i) for i in items if _field(i, "type") == "function_call"]
    return await _run(gateway, "responses", calls, max_concurrency)


async def _settle(
    gateway: GatewayClient,
    item: PendingApproval,
    decision: HostDecision | None,
    result: tuple[Any] | None,
) -> PendingApproval:
    try:
        if decision is not None and item.kind == "approval":
            await gateway.decide(item.approval_id, decision)
        elif result is not None and item.kind == "external":
            await gateway.post_result(item.approval_id, value=result[0])
    except CannotDecide as exc:
        return replace(item, note=str(exc))
    return item


async def complete_pending(
    gateway: GatewayClient,
    pending: Iterable[PendingApproval],
    *,
    decisions: Mapping[str, HostDecision] | None = None,
    results: Mapping[str, Any] | None = None,
    max_concurrency: int = 8,
) -> ToolCallsOutcome:
    """Post the host's answers for held calls, then re-issue them to collect their outcomes.

    Args:
        gateway: The gateway the calls were made through.
        pending: Held calls from an earlier outcome.
        decisions: By tool call id, for approvals: `HostDecision.approve` (optionally with
            edited arguments), `HostDecision.deny`, `HostDecision.respond`.
        results: By tool call id, for external calls: the value the worker produced.
        max_concurrency: How many calls run at once.

    Returns:
        Messages for the calls that have an outcome now; calls still held stay in ``pending``
        (with ``note`` set when the host's decision could not be applied).

    Raises:
        DecisionRejected: the gateway refused a decision (not offered, or an invalid edit).
    """
    decisions, results = decisions or {}, results or {}
    items = list(pending)
    settled: list[PendingApproval] = list(items)

    async def settle(index: int, item: PendingApproval) -> None:
        found = (results[item.tool_call_id],) if item.tool_call_id in results else None
        decision = decisions.get(item.tool_call_id)
        settled[index] = await _settle(gateway, item, decision, found)

    async with anyio.create_task_group() as tg:
        for index, item in enumerate(items):
            tg.start_soon(settle, index, item)
    return await _reissue(gateway, settled, max_concurrency)


async def _reissue(
    gateway: GatewayClient, items: Sequence[PendingApproval], limit: int
) -> ToolCallsOutcome:
    """Re-issue held calls with their original arguments; the gateway answers with outcomes
    (a call a task follows is answered by its task's outcome)."""
    outcome = await _from_tasks(gateway, [item for item in items if item.task_id is not None])
    apis: tuple[Api, ...] = ("chat", "responses")
    for api in apis:
        group = [item for item in items if item.api == api and item.task_id is None]
        calls = [_Call(item.tool_call_id, item.tool, item.args) for item in group]
        rerun = await _run(gateway, api, calls, limit)
        notes = {item.tool_call_id: item.note for item in group}
        outcome.messages.extend(rerun.messages)
        outcome.pending.extend(replace(p, note=notes[p.tool_call_id]) for p in rerun.pending)
    return outcome


async def _from_tasks(gateway: GatewayClient, items: Sequence[PendingApproval]) -> ToolCallsOutcome:
    """The messages of held calls whose tasks ended (within `TASK_WAIT`); the others pending."""
    answers: list[dict[str, Any] | PendingApproval] = list(items)

    async def one(index: int, item: PendingApproval) -> None:
        assert item.task_id is not None
        result = await gateway.task_result(item.task_id, timeout=TASK_WAIT)
        if result is not None:
            answers[index] = _message(item.api, item.tool_call_id, _text(result))

    async with anyio.create_task_group() as tg:
        for index, item in enumerate(items):
            tg.start_soon(one, index, item)
    outcome = ToolCallsOutcome()
    for answer in answers:
        if isinstance(answer, PendingApproval):
            outcome.pending.append(answer)
        else:
            outcome.messages.append(answer)
    return outcome
