"""The gateway as the agent adapters see it: list, call, decide, post results.

Two backends implement `GatewayClient`: `InProcessGateway` (a running `gateway.Gateway` in this
process) and `gateway.adapters._remote.RemoteGateway` (MCP + REST over HTTP). The adapters in
`gateway.adapters.pydantic_ai` and `gateway.adapters.openai` only speak this protocol.
"""

from __future__ import annotations

import functools
import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Literal, Protocol, Self

from mcp_types import TextContent

from gateway.adapters._tasks import InProcessTasks
from gateway.approvals.context_pack import context_pack
from gateway.approvals.errors import DecisionRefused, NotAnApprover, PendingNotFound
from gateway.approvals.human_interrupt import interrupt_config, interrupt_request, noted
from gateway.gateway import Gateway
from gateway.mcp.errors import mcp_error
from gateway.telemetry import tool_call_span
from toolsets.context import ANONYMOUS, CallContext, Principal
from toolsets.decision import ALL_DECISION_KINDS
from toolsets.errors import ApprovalConflict, LockgateError, ToolQuarantined, UpstreamError
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef

__all__ = [
    "CannotDecide",
    "DecisionRejected",
    "GatewayClient",
    "HeldCall",
    "HostDecision",
    "InProcessGateway",
    "denial_of",
    "held_of",
    "minimal_interrupt_request",
    "result_text",
]

PENDING_META = "lockgate/pending"
IN_PROCESS_APPROVER = (
    "the host has no approver credential, and the rule does not name 'caller' among its "
    "approvers: pass approver= (a principal the rule names) to from_gateway, or decide the call "
    "on the approvals page, the CLI or the REST API"
)
DECISION_META = "lockgate/decision"


class CannotDecide(LockgateError):
    """The host holds no credential that may decide this call; the gateway's approvers decide."""


class DecisionRejected(LockgateError):
    """The gateway refused the host's decision (not offered, invalid edit, unknown call)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class HostDecision:
    """What a Python host decided about a held call.

    Attributes:
        kind: ``approve``, ``edit`` (run ``args`` instead), ``deny`` (``message`` for the model)
            or ``respond`` (``message`` is the result; the tool never runs).
        message: The deny message or the response text.
        args: The edited arguments, for ``edit``.
    """

    kind: Literal["approve", "edit", "deny", "respond"]
    message: str | None = None
    args: Mapping[str, Any] | None = None

    @classmethod
    def approve(cls, args: Mapping[str, Any] | None = None) -> HostDecision:
        """Approve, or (with ``args``) approve with edited arguments."""
        return cls(kind="approve") if args is None else cls(kind="edit", args=dict(args))

    @classmethod
    def deny(cls, message: str = "The call was denied.") -> HostDecision:
        """Deny; the model reads ``message``."""
        return cls(kind="deny", message=message)

    @classmethod
    def respond(cls, text: str) -> HostDecision:
        """Skip the tool; ``text`` is its result."""
        return cls(kind="respond", message=text)


@dataclass(frozen=True, slots=True, kw_only=True)
class HeldCall:
    """A call the gateway answered "pending": waiting for an approver or an external worker.

    Attributes:
        id: The gateway's pending-call id (``ap_...``).
        kind: ``approval`` or ``external``.
        state: The record's state when the call was answered.
        rule_id: The policy rule that held the call, when the host may read it.
        reason: Why the call is held, when the host may read it.
        task_id: The task that follows the call (an adapter that asks for tasks), if any.
    """

    id: str
    kind: Literal["approval", "external"]
    state: str = "pending"
    rule_id: str | None = None
    reason: str | None = None
    task_id: str | None = None


class GatewayClient(Protocol):
    """A gateway reached by an adapter, acting for one principal."""

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...

    async def list_tools(self) -> dict[str, ToolDef]:
        """The tools visible to the principal, by exposed name."""
        ...

    async def call_tool(
        self, name: str, args: Mapping[str, Any], *, max_hold: float | None = None
    ) -> ToolResult:
        """Call a tool through the gateway (raises `ToolNotFoundError` for unknown tools).

        ``max_hold`` caps the seconds a held call waits for its decision before it is answered
        "pending" (None: the rule's ``hold``).
        """
        ...

    async def interrupt_request(
        self, held: HeldCall, name: str, args: Mapping[str, Any], *, note: str | None = None
    ) -> dict[str, Any]:
        """The held call as a LangGraph interrupt request (see
        `gateway.approvals.human_interrupt`); ``note`` says why the last response was refused."""
        ...

    async def describe(self, held: HeldCall) -> HeldCall:
        """``held`` with its rule id and reason filled in, when the host may read them."""
        ...

    async def decide(self, id: str, decision: HostDecision) -> None:
        """Decide a held approval.

        Raises:
            CannotDecide: no credential of the host may decide it.
            DecisionRejected: the gateway refused the decision.
        """
        ...

    async def post_result(self, id: str, *, value: Any = None, error: str | None = None) -> None:
        """Post the result of an external (deferred) call.

        Raises:
            CannotDecide: the host holds no worker or approver credential.
            DecisionRejected: the gateway refused the result.
        """
        ...

    async def task_result(self, task_id: str, *, timeout: float) -> ToolResult | None:
        """The outcome of the task that follows a held call, once it ends (None: not within
        ``timeout`` seconds, or a backend that asks for no tasks)."""
        ...


def held_of(result: ToolResult) -> HeldCall | None:
    """The held call a "pending" result names, or None for any other result."""
    pending = (result.meta or {}).get(PENDING_META)
    if not isinstance(pending, Mapping) or pending.get("kind") not in {"approval", "external"}:
        return None
    if pending.get("state") not in {"pending", "executing"}:
        return None
    task = pending.get("task_id")
    return HeldCall(
        id=str(pending["id"]),
        kind=pending["kind"],
        state=str(pending["state"]),
        task_id=task if isinstance(task, str) else None,
    )


def denial_of(result: ToolResult) -> Mapping[str, Any] | None:
    """The policy decision of a call the policy denied (effect, rule id, reason), or None."""
    decision = (result.meta or {}).get(DECISION_META)
    return decision if isinstance(decision, Mapping) else None


def minimal_interrupt_request(
    held: HeldCall, name: str, args: Mapping[str, Any], *, note: str | None = None
) -> dict[str, Any]:
    """An interrupt request for a held call the host may not read: every response offered (the
    gateway refuses those its rule does not offer)."""
    request = {
        "action_request": {"action": name, "args": dict(args)},
        "config": interrupt_config(ALL_DECISION_KINDS),
        "description": f"held by the gateway for approval (approval {held.id})",
        "lockgate": {"approval_id": held.id, "state": held.state},
    }
    return noted(request, note)


def result_text(result: ToolResult) -> str:
    """The result as text for a model: text blocks joined; otherwise structured content as JSON."""
    texts = [block.text for block in result.content if isinstance(block, TextContent)]
    if texts:
        return "\n".join(texts)
    if result.structured_content is not None:
        return json.dumps(result.structured_content, ensure_ascii=False)
    others = [block.model_dump(mode="json", exclude_none=True) for block in result.content]
    return json.dumps(others, ensure_ascii=False) if others else ""


@dataclass(slots=True, kw_only=True)
class InProcessGateway:
    """A running `gateway.Gateway` in this process, called as ``principal``.

    The host owns the gateway's lifecycle (``async with Gateway.from_config(...)``). Decisions are
    made as ``approver`` when given; otherwise as the caller, which the gateway accepts only for
    rules whose approvers include ``caller``.

    Attributes:
        gateway: The running gateway.
        principal: Who calls the tools (policies and approvals are bound to it).
        approver: Who decides held calls for the host, if anyone.
        session_id: The session the calls belong to (policy session state); one per client.
        channel: Recorded as the decision's channel.
        as_task: Ask for a task: a held call is answered at once and followed by a task
            (`gateway.adapters._tasks`).
    """

    gateway: Gateway
    principal: Principal = ANONYMOUS
    approver: Principal | None = None
    session_id: str = field(default_factory=lambda: f"inprocess-{uuid.uuid4().hex[:12]}")
    channel: str = "host"
    as_task: bool = False
    _tasks: InProcessTasks | None = field(default=None, init=False, repr=False)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        return None

    def _ctx(self, max_hold: float | None = None) -> CallContext:
        return CallContext(principal=self.principal, session_id=self.session_id, max_hold=max_hold)

    async def list_tools(self) -> dict[str, ToolDef]:
        return dict(await self.gateway.tools(self._ctx()))

    async def call_tool(
        self, name: str, args: Mapping[str, Any], *, max_hold: float | None = None
    ) -> ToolResult:
        ctx = self._ctx(max_hold)
        with tool_call_span(self.gateway.parts.telemetry, name, ctx) as span:  # when traced
            if self.as_task:
                self._tasks = self._tasks or InProcessTasks(self.gateway)
                call = functools.partial(self._call, name, args)
                result = await self._tasks.call(call, ctx, name)
            else:
                result = await self._call(name, args, ctx)
            if span is not None:
                span.end_with(result)
            return result

    async def _call(self, name: str, args: Mapping[str, Any], ctx: CallContext) -> ToolResult:
        try:
            return await self.gateway.call_tool(name, dict(args), ctx)
        except (UpstreamError, ToolQuarantined) as exc:  # as over MCP (gateway/mcp/errors.py)
            outcome = mcp_error(exc)
            return outcome if isinstance(outcome, ToolResult) else ToolResult.error(str(exc))

    async def task_result(self, task_id: str, *, timeout: float) -> ToolResult | None:
        self._tasks = self._tasks or InProcessTasks(self.gateway)
        return await self._tasks.outcome(task_id, self.principal, timeout=timeout)

    async def describe(self, held: HeldCall) -> HeldCall:
        call = await self.gateway.store.get(held.id)
        if call is None:
            return held
        return HeldCall(
            id=held.id,
            kind=held.kind,
            state=call.state,
            rule_id=call.rule_id,
            reason=call.reason,
            task_id=held.task_id,
        )

    async def interrupt_request(
        self, held: HeldCall, name: str, args: Mapping[str, Any], *, note: str | None = None
    ) -> dict[str, Any]:
        call = await self.gateway.store.get(held.id)
        if call is None:
            return minimal_interrupt_request(held, name, args, note=note)
        gateway = self.gateway
        context = await context_pack(
            call,
            tools=gateway.approvals.tools,
            engine=gateway.policy.current,
            session=gateway.parts.sessions.ensure,
        )
        return interrupt_request(call, note=note, context=context)

    async def decide(self, id: str, decision: HostDecision) -> None:
        who = self.approver or self.principal
        try:
            await self.gateway.approvals.decide(
                id,
                decision.kind,
                by=who,
                channel=self.channel,
                message=decision.message,
                args=decision.args,
                as_caller=self.approver is None,
            )
        except NotAnApprover as exc:
            fix = IN_PROCESS_APPROVER if self.approver is None else "not an approver the rule names"
            raise CannotDecide(f"{exc}: {fix}") from None
        except (DecisionRefused, PendingNotFound) as exc:
            raise DecisionRejected(str(exc)) from None
        except ApprovalConflict:
            return  # decided elsewhere first (or expired): re-issuing the call reports that

    async def post_result(self, id: str, *, value: Any = None, error: str | None = None) -> None:
        try:
            await self.gateway.approvals.post_result(
                id, by=self.approver or self.principal, value=value, error=error
            )
        except (DecisionRefused, PendingNotFound) as exc:
            raise DecisionRejected(str(exc)) from None
        except ApprovalConflict:
            return
