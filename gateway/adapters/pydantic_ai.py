"""The gateway as a pydantic-ai toolset; held calls become pydantic-ai deferred tool calls.

Install with ``pip install 'lockgate[pydantic-ai]'``. Build the toolset from a running gateway
in this process (`GatewayToolset.from_gateway`) or from a gateway's URL
(`GatewayToolset.from_url`, MCP at ``/mcp``). Tools keep the gateway's names, descriptions and
schemas; their MCP annotations, server and pin are in ``ToolDefinition.metadata``.

The approval flow (give the agent ``output_type=[str, DeferredToolRequests]``):

1. A call the policy sends to approval is held by the gateway, then answered "pending". The
   toolset raises ``ApprovalRequired`` with metadata ``approval_id``, ``rule_id``, ``reason``,
   ``tool`` and ``args``, so the run ends with ``DeferredToolRequests.approvals``. A ``defer``
   (external) call raises ``CallDeferred`` instead and lands in ``DeferredToolRequests.calls``.
2. The host answers with ``DeferredToolResults``: ``True``, ``ToolApproved(override_args=...)``
   or ``ToolDenied(message)`` per approval; a value per external call.
3. Before resuming, the host calls ``results = await toolset.apply_decisions(requests, results)``.
   It posts ``approve``/``edit``/``deny`` to the gateway (pydantic-ai never calls a tool for a
   denial, so this is the only place the gateway learns of one) and posts external results;
   denials and external results are then collected back through the gateway (so each outcome is
   delivered once), and what it did is recorded in ``results.metadata``.
4. ``agent.run(message_history=..., deferred_tool_results=results)`` resumes. For each approved
   call pydantic-ai calls the tool again; the toolset re-issues the call with its *original*
   arguments, which the gateway matches to the decided record and executes exactly once (an edit
   runs the edited arguments the gateway stored).

Resuming with ``True``/``ToolApproved`` without step 3 also works in the same process: the
toolset then posts the decision itself. Deciding needs a credential: ``approver=`` in process
(without one, the host decides only where the rule lists ``caller`` as an approver), or
``approver_token=`` remotely. Without it the re-issued call waits for the gateway's own approvers
for the rule's ``hold``; if still undecided, the call is deferred again with ``waiting_for`` and
``note`` in its metadata saying so. Denials by the policy, by a person and tool errors reach the
model as ``ToolFailed`` text it can act on; a refusal's ``_meta["lockgate/refusal"]`` (kind,
rule, retry-after, what would unblock it) and an upstream failure's ``_meta["lockgate/error"]``
are on the failed ``ToolReturnPart``'s ``metadata`` in the run's messages (never sent to the
model).

With ``from_gateway(..., as_task=True)`` the toolset asks for tasks (`gateway.tasks.held`): a
held call is deferred at once (no hold) with ``task_id`` in its metadata, and on resume the
toolset reads the task's outcome instead of re-issuing the call (the gateway ran the approved
call once, in the task); denials and external results are collected from the task too.
"""

from __future__ import annotations

from typing import Any, Self, Unpack

import anyio
from pydantic_ai import (
    ApprovalRequired,
    CallDeferred,
    DeferredToolRequests,
    DeferredToolResults,
    ModelRetry,
    ToolApproved,
    ToolDefinition,
    ToolDenied,
    ToolFailed,
)
from pydantic_ai.exceptions import ToolFailedError
from pydantic_ai.messages import ToolCallPart, ToolReturn, ToolReturnPart
from pydantic_ai.tools import RunContext
from pydantic_ai.toolsets import AbstractToolset, ToolsetTool
from pydantic_core import SchemaValidator, core_schema

from gateway.adapters._client import (
    CannotDecide,
    GatewayClient,
    HeldCall,
    HostDecision,
    InProcessGateway,
    held_of,
    result_text,
)
from gateway.adapters._remote import RemoteGateway, RemoteOptions
from gateway.gateway import Gateway
from toolsets.context import ANONYMOUS, Principal
from toolsets.errors import ToolNotFoundError
from toolsets.refusal import ERROR_META, REFUSAL_META
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef

__all__ = ["GatewayToolset", "HostDecision"]

ANY_ARGS = SchemaValidator(core_schema.any_schema())
"""The gateway validates arguments against the pinned schema; pydantic-ai passes them through."""
WAITING = "the gateway's approvers"
TASK_WAIT = 50.0
"""Seconds a resumed call waits for its task to end (as long as a rule's default hold)."""
_TOLD_APART = frozenset({REFUSAL_META, ERROR_META})


class GatewayToolset(AbstractToolset[Any]):
    """A lockgate gateway's tools as a pydantic-ai toolset (see the module docs for approvals).

    Args:
        client: The gateway backend (`InProcessGateway` or `RemoteGateway`).
        id: The toolset id (unique among an agent's toolsets).
        max_retries: Retries pydantic-ai allows per tool.
    """

    def __init__(self, client: GatewayClient, *, id: str | None = "lockgate", max_retries: int = 1):
        self.client = client
        self._id = id
        self._max_retries = max_retries
        self._held: dict[str, dict[str, Any]] = {}

    @classmethod
    def from_gateway(
        cls,
        gateway: Gateway,
        *,
        principal: Principal = ANONYMOUS,
        approver: Principal | None = None,
        id: str | None = "lockgate",
        as_task: bool = False,
    ) -> GatewayToolset:
        """Tools of a running in-process ``gateway``, called as ``principal``.

        Args:
            gateway: A started `gateway.Gateway` (the host owns its lifecycle).
            principal: Who calls the tools.
            approver: Who decides held calls for the host, if the host may decide.
            id: The toolset id.
            as_task: Ask for tasks: a held call is deferred at once (no hold), its metadata
                names the task (``task_id``), and the resumed call reads the task's outcome.
        """
        client = InProcessGateway(
            gateway=gateway,
            principal=principal,
            approver=approver,
            channel="pydantic-ai",
            as_task=as_task,
        )
        return cls(client, id=id)

    @classmethod
    def from_url(
        cls, url: str, *, id: str | None = "lockgate", **options: Unpack[RemoteOptions]
    ) -> GatewayToolset:
        """Tools of the gateway at ``url`` over MCP; use it as an async context manager.

        Args:
            url: The gateway's base URL or its ``/mcp`` URL.
            id: The toolset id.
            **options: ``token``, ``approver_token``, ``mode``, ``timeout`` (see
                `RemoteGateway`).
        """
        return cls(RemoteGateway(url, **options), id=id)

    @property
    def id(self) -> str | None:
        return self._id

    async def __aenter__(self) -> Self:
        await self.client.__aenter__()
        return self

    async def __aexit__(self, *args: Any) -> bool | None:
        await self.client.__aexit__(*args)
        return None

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        return {
            name: ToolsetTool(
                toolset=self,
                tool_def=_definition(tool),
                max_retries=self._max_retries,
                args_validator=ANY_ARGS,
            )
            for name, tool in (await self.client.list_tools()).items()
        }

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        held = self._held_for(ctx) if ctx.tool_call_approved else None
        note = None
        try:
            if held is None:
                result = await self.client.call_tool(name, tool_args)
            elif held.get("task_id"):  # the task runs the approved call: read its outcome
                note = await self._decide_on_resume(held, tool_args)
                result = await self._task_outcome(held, ctx, note)
            else:
                note = await self._decide_on_resume(held, tool_args)
                result = await self.client.call_tool(name, held["args"])
        except ToolNotFoundError as exc:  # hidden or removed since the model saw the list
            raise ToolFailed(str(exc)) from None
        return await self._outcome(
            name, tool_args if held is None else held["args"], result, ctx, note
        )

    def _held_for(self, ctx: RunContext[Any]) -> dict[str, Any] | None:
        remembered = self._held.pop(ctx.tool_call_id or "", None)
        given = ctx.tool_call_metadata
        if isinstance(given, dict) and "approval_id" in given and "args" in given:
            return given
        return remembered

    async def _task_outcome(
        self, held: dict[str, Any], ctx: RunContext[Any], note: str | None
    ) -> ToolResult:
        result = await self.client.task_result(held["task_id"], timeout=TASK_WAIT)
        if result is not None:
            return result
        metadata = held | {"waiting_for": WAITING, "note": note or "the task has not ended yet"}
        self._held[ctx.tool_call_id or ""] = metadata
        raise ApprovalRequired(metadata=metadata)

    async def _decide_on_resume(self, held: dict[str, Any], args: dict[str, Any]) -> str | None:
        if held.get("decided"):
            return None
        edited = args if args != held["args"] else None
        try:
            await self.client.decide(held["approval_id"], HostDecision.approve(edited))
        except CannotDecide as exc:
            return str(exc)
        return None

    async def _outcome(
        self,
        name: str,
        args: dict[str, Any],
        result: ToolResult,
        ctx: RunContext[Any],
        note: str | None,
    ) -> Any:
        held = held_of(result)
        if held is None:
            if result.is_error:
                raise _failed(name, result, ctx)
            return result_text(result)
        metadata = _metadata(await self.client.describe(held), name, args)
        if note is not None:
            metadata |= {"waiting_for": WAITING, "note": note}
        if held.kind == "external":
            raise CallDeferred(metadata=metadata)
        self._held[ctx.tool_call_id or ""] = metadata
        raise ApprovalRequired(metadata=metadata)

    async def apply_decisions(
        self, requests: DeferredToolRequests, results: DeferredToolResults
    ) -> DeferredToolResults:
        """Post the host's answers to the gateway; returns the results to resume the run with.

        For every approval in ``results`` that the gateway holds: ``True`` or
        ``ToolApproved()`` posts ``approve``, ``ToolApproved(override_args)`` posts ``edit``,
        ``False`` or ``ToolDenied(message)`` posts ``deny``, then collects the denial. For every
        external call, the value (or ``ToolFailed``/``ModelRetry`` message, as an error) is posted
        as the call's result, then collected back through the gateway. Answers the host may not
        post are left to the gateway's approvers; the returned metadata says so (``waiting_for``,
        ``note``).

        Raises:
            DecisionRejected: the gateway refused a decision (not offered, or an invalid edit).
        """
        out = DeferredToolResults(
            calls=dict(results.calls),
            approvals=dict(results.approvals),
            metadata=dict(results.metadata),
            answered_by=dict(results.answered_by),
        )
        parts = {part.tool_call_id: part for part in [*requests.approvals, *requests.calls]}
        async with anyio.create_task_group() as tg:
            for call_id, answer in results.approvals.items():
                held = requests.metadata.get(call_id)
                if held is not None and "approval_id" in held:
                    tg.start_soon(self._post_decision, call_id, answer, held, out)
            for call_id, value in results.calls.items():
                held = requests.metadata.get(call_id)
                if held is not None and "approval_id" in held and call_id in parts:
                    tg.start_soon(self._post_result, parts[call_id], value, held, out)
        return out

    async def _post_decision(
        self, call_id: str, answer: Any, held: dict[str, Any], out: DeferredToolResults
    ) -> None:
        decision = _host_decision(answer, held["args"])
        try:
            await self.client.decide(held["approval_id"], decision)
        except CannotDecide as exc:
            out.metadata[call_id] = held | {
                "decided": False,
                "waiting_for": WAITING,
                "note": str(exc),
            }
            return
        out.metadata[call_id] = held | {"decided": True}
        if decision.kind == "deny":
            # Collect the denial so the gateway marks it delivered; otherwise the next identical
            # call would be answered with this old denial instead of a new approval request.
            result = await self._collect(held)
            if result is not None and held_of(result) is None and result.is_error:
                out.approvals[call_id] = ToolDenied(result_text(result))

    async def _post_result(
        self, part: ToolCallPart, value: Any, held: dict[str, Any], out: DeferredToolResults
    ) -> None:
        if isinstance(value, ToolFailed | ModelRetry):
            posted: dict[str, Any] = {"error": value.message}
        else:
            posted = {"value": value.return_value if isinstance(value, ToolReturn) else value}
        try:
            await self.client.post_result(held["approval_id"], **posted)
        except CannotDecide as exc:
            out.metadata[part.tool_call_id] = held | {"waiting_for": WAITING, "note": str(exc)}
            return
        result = await self._collect(held)
        if result is not None and held_of(result) is None:  # delivered: as the gateway recorded
            text = result_text(result)
            out.calls[part.tool_call_id] = ToolFailed(text) if result.is_error else text

    async def _collect(self, held: dict[str, Any]) -> ToolResult | None:
        """The outcome of a decided held call: its task's, or the call re-issued."""
        if held.get("task_id"):
            return await self.client.task_result(held["task_id"], timeout=TASK_WAIT)
        return await self.client.call_tool(held["tool"], held["args"])


def _failed(name: str, result: ToolResult, ctx: RunContext[Any]) -> Exception:
    """What the model reads of an error result: its text. A refusal's ``lockgate/refusal`` (or a
    failure's ``lockgate/error``) rides on the failed part's ``metadata``, which your code reads
    in the run's messages and the model never sees."""
    text = result_text(result)
    meta = {key: value for key, value in (result.meta or {}).items() if key in _TOLD_APART}
    if not meta or ctx.tool_call_id is None:
        return ToolFailed(text)
    part = ToolReturnPart(
        tool_name=name,
        content=text,
        tool_call_id=ctx.tool_call_id,
        outcome="failed",
        metadata=meta,
    )
    return ToolFailedError(part)


def _definition(tool: ToolDef) -> ToolDefinition:
    return ToolDefinition(
        name=tool.name,
        description=tool.description,
        parameters_json_schema=dict(tool.input_schema),
        return_schema=dict(tool.output_schema) if tool.output_schema is not None else None,
        metadata={
            "annotations": dict(tool.annotations or {}),
            "server": tool.server,
            "pin": tool.pin,
            "title": tool.title,
        },
    )


def _metadata(held: HeldCall, name: str, args: dict[str, Any]) -> dict[str, Any]:
    metadata = {
        "approval_id": held.id,
        "kind": held.kind,
        "rule_id": held.rule_id,
        "reason": held.reason,
        "tool": name,
        "args": args,
    }
    return metadata if held.task_id is None else metadata | {"task_id": held.task_id}


def _host_decision(answer: Any, original: dict[str, Any]) -> HostDecision:
    if answer is False or isinstance(answer, ToolDenied):
        return HostDecision.deny(
            (answer if isinstance(answer, ToolDenied) else ToolDenied()).message
        )
    if isinstance(answer, ToolApproved) and answer.override_args not in (None, original):
        return HostDecision.approve(answer.override_args)
    return HostDecision.approve()
