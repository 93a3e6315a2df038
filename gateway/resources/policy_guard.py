"""`PolicyResourceGuard`: the policy over resources and prompts, as the resource handlers ask it.

Listings keep what the policy does not ``hide`` (rules reading ``args`` or ``session`` are not
evaluated for listings). Each read or get is decided with the caller's session, like a tool
call, then:

- ``hide``: answered as unknown (`ResourceNotFound`, `PromptNotFound`); nothing is recorded, as
  for a hidden tool;
- ``deny``: ``resource.denied`` / ``prompt.denied`` is put on record (audit log first, failing
  closed), then `ResourceDenied` / `PromptDenied` carries the rule's message;
- ``ask`` (resource reads only): held like a tool call, as a pending call of the tool
  ``resources/read`` with the arguments ``{"server": ..., "uri": ...}``: approvers decide over
  the REST API, the page or the CLI (approve or deny; the caller is never asked over its own
  client). Approved within the hold, the read runs once; otherwise `ResourceDenied` names the
  approval id, and the same read issued again after the approval runs it;
- ``allow``: the read or get runs, then ``resource.read`` / ``prompt.get`` tells how it went
  and how much it returned (never the content).
"""

from __future__ import annotations

import base64
import binascii
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from typing import Any, Final, TypeVar

import anyio

from gateway.approvals.editing import SessionLoader
from gateway.approvals.holding import HeldCalls, Holding
from gateway.approvals.refusals import decision_meta
from gateway.approvals.service import ApprovalService
from gateway.events import resource_events as events
from gateway.events.recorder import Recorder
from policies.resource_rules import ResourceKind
from toolsets.approval_required import Approved
from toolsets.context import CallContext
from toolsets.decision import Decision, DecisionKind
from toolsets.errors import PromptDenied, PromptNotFound, ResourceDenied, ResourceNotFound
from toolsets.labels import LabelSink
from toolsets.refusal import Refusal
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef

__all__ = ["RESOURCE_READ", "PolicyResourceGuard", "prompt_summary", "read_summary"]

T = TypeVar("T")

RESOURCE_READ: Final = "resources/read"
"""The tool name of a held resource read (not a valid exposed name: no tool can be called so)."""
READ_TOOL: Final = ToolDef(
    name=RESOURCE_READ,
    description="Read a resource of an upstream server (held for approval by the policy).",
    input_schema={
        "type": "object",
        "properties": {"server": {"type": "string"}, "uri": {"type": "string"}},
        "required": ["server", "uri"],
        "additionalProperties": False,
    },
    upstream_name=RESOURCE_READ,
)
_READ_DECISIONS: Final[frozenset[DecisionKind]] = frozenset({"approve", "deny"})
_WAITING: Final = frozenset({"pending", "approved", "executing"})


def _field(value: object, *names: str) -> Any:
    """An attribute of an SDK model, or a key of its wire form."""
    for name in names:
        found = value.get(name) if isinstance(value, Mapping) else getattr(value, name, None)
        if found is not None:
            return found
    return None


def _size(content: object) -> int:
    text = _field(content, "text")
    if isinstance(text, str):
        return len(text.encode())
    blob = _field(content, "blob")
    try:
        return len(base64.b64decode(blob, validate=True)) if isinstance(blob, str) else 0
    except (binascii.Error, ValueError):
        return len(blob)


def read_summary(result: object) -> dict[str, Any]:
    """How much a ``resources/read`` result holds: ``contents``, ``bytes``, ``mime_types``."""
    contents = _field(result, "contents") or []
    mimes = {m for c in contents if isinstance(m := _field(c, "mime_type", "mimeType"), str)}
    return {
        "contents": len(contents),
        "bytes": sum(_size(content) for content in contents),
        "mime_types": sorted(mimes),
    }


def prompt_summary(result: object) -> dict[str, Any]:
    """How much a ``prompts/get`` result holds: ``messages``."""
    return {"messages": len(_field(result, "messages") or [])}


def _failure(exc: BaseException) -> str:
    if isinstance(exc, anyio.get_cancelled_exc_class()):
        return "cancelled before it finished"
    return f"{type(exc).__name__}: {exc}"


def _refusal(decision: Decision) -> str:
    return decision.message or f"Denied by policy: {decision.reason}"


class PolicyResourceGuard:
    """Implements `gateway.resources.guard.ResourceGuard` on the gateway's policy,
    sessions, approval service and event bus.

    Args:
        approvals: Holds reads the policy asks approval for (as pending calls); its policy is
            the one in force (reloads apply to the next listing, read or get).
        recorder: Puts refusals on record (audit log first) and publishes them; its bus
            carries ``resource.read`` and ``prompt.get``.
        sessions: Each downstream session's state, which decisions read as ``session``.
        holding: Where held reads are counted while their caller waits (the API's ``waiting``).
        labels: Where the labels a read or get brings in (``labels`` on its rule) are added
            to the session.
    """

    def __init__(
        self,
        approvals: ApprovalService,
        recorder: Recorder,
        *,
        sessions: SessionLoader,
        holding: Holding | None = None,
        labels: LabelSink | None = None,
    ) -> None:
        self._policy, self._sessions, self._labels = approvals.policy, sessions, labels
        self._record, self._bus = recorder.record, recorder.bus
        approvals.register_reviewed(READ_TOOL)  # approvals of held reads find their "tool"
        self._held = HeldCalls(approvals, self._refuse_read, holding=holding)

    def resource_visible(self, uri: str, server: str, ctx: CallContext) -> bool:
        """Whether listings (resources, templates, subscriptions, completions) show ``uri``,
        the upstream's original URI or URI template."""
        rules = self._policy.current.resources
        decision = rules.evaluate_resource(uri, server, ctx.principal, listing=True)
        return decision.effect != "hide"

    def prompt_visible(self, name: str, server: str, ctx: CallContext) -> bool:
        """Whether listings (prompts, completions) show the exposed prompt ``name``."""
        rules = self._policy.current.resources
        decision = rules.evaluate_prompt(name, server, None, ctx.principal, listing=True)
        return decision.effect != "hide"

    async def read_resource(
        self, uri: str, server: str, ctx: CallContext, read: Callable[[], Awaitable[T]]
    ) -> T:
        """Decide a read of ``uri`` (the upstream's original URI) on ``server``; ``read`` runs
        only when the policy (or an approver) lets it.

        Raises:
            ResourceNotFound: the policy hides it.
            ResourceDenied: the policy or an approver refused it, or it waits for a decision.
            AuditUnavailable: a refusal could not be put on record.
        """
        session = await self._sessions.ensure(ctx)
        rules = self._policy.current.resources
        decision = rules.evaluate_resource(uri, server, ctx.principal, session)
        ctx = replace(ctx, decision=decision)
        if decision.effect == "hide":
            raise ResourceNotFound(uri)
        if decision.effect == "ask":
            return await self._held_read(uri, server, ctx, read)
        if decision.effect != "allow":  # deny (and defer, which reads cannot have)
            message = _refusal(decision)
            await self._record(events.resource_denied(uri, server, ctx, decision, message))
            raise ResourceDenied(uri, message, data={"lockgate/decision": decision_meta(decision)})
        return await self._observed_read(uri, server, ctx, read)

    async def get_prompt(
        self,
        name: str,
        server: str,
        arguments: Mapping[str, str],
        ctx: CallContext,
        get: Callable[[], Awaitable[T]],
    ) -> T:
        """Decide a get of the exposed prompt ``name`` on ``server`` with ``arguments``;
        ``get`` runs only when the policy allows it.

        Raises:
            PromptNotFound: the policy hides it.
            PromptDenied: the policy refused it.
            AuditUnavailable: the refusal could not be put on record.
        """
        session = await self._sessions.ensure(ctx)
        rules = self._policy.current.resources
        decision = rules.evaluate_prompt(name, server, arguments, ctx.principal, session)
        ctx = replace(ctx, decision=decision)
        if decision.effect == "hide":
            raise PromptNotFound(name)
        if decision.effect != "allow":  # deny (ask and defer are load errors for prompts)
            message = _refusal(decision)
            event = events.prompt_denied(name, server, ctx, arguments, decision, message=message)
            await self._record(event)
            raise PromptDenied(name, message, data={"lockgate/decision": decision_meta(decision)})
        started = time.perf_counter()
        try:
            result = await get()
        except BaseException as exc:
            elapsed = (time.perf_counter() - started) * 1000
            error = _failure(exc)
            failed = events.prompt_get(
                name, server, ctx, arguments, decision, summary={}, duration_ms=elapsed, error=error
            )
            self._bus.publish(failed)
            raise
        elapsed = (time.perf_counter() - started) * 1000
        await self._brought_in(ctx, "prompts", name, server)
        summary = prompt_summary(result)
        self._bus.publish(
            events.prompt_get(
                name, server, ctx, arguments, decision, summary=summary, duration_ms=elapsed
            )
        )
        return result

    async def _observed_read(
        self, uri: str, server: str, ctx: CallContext, read: Callable[[], Awaitable[T]]
    ) -> T:
        """Run ``read``, then publish ``resource.read`` (also when it failed or was cancelled)."""
        decision = ctx.decision
        assert decision is not None  # decided in read_resource
        started = time.perf_counter()
        try:
            result = await read()
        except BaseException as exc:
            elapsed = (time.perf_counter() - started) * 1000
            self._bus.publish(
                events.resource_read(
                    uri, server, ctx, decision, summary={}, duration_ms=elapsed, error=_failure(exc)
                )
            )
            raise
        elapsed = (time.perf_counter() - started) * 1000
        await self._brought_in(ctx, "resources", uri, server)
        summary = read_summary(result)
        self._bus.publish(
            events.resource_read(uri, server, ctx, decision, summary=summary, duration_ms=elapsed)
        )
        return result

    async def _brought_in(
        self, ctx: CallContext, kind: ResourceKind, name: str, server: str
    ) -> None:
        """A read (get) succeeded: the labels its rules give it enter the session."""
        labels = self._policy.current.labels.labeller.read_labels(kind, name, server)
        if labels and self._labels is not None:
            noun = "resource" if kind == "resources" else "prompt"
            await self._labels.add(ctx, labels, f"{noun}:{name}")

    async def _held_read(
        self, uri: str, server: str, ctx: CallContext, read: Callable[[], Awaitable[T]]
    ) -> T:
        """Hold the read for approval; run it once approved (or covered by a grant)."""
        decision = ctx.decision
        assert decision is not None  # decided in read_resource
        offered = decision.approval.decisions & _READ_DECISIONS or _READ_DECISIONS
        held = replace(decision, approval=replace(decision.approval, decisions=offered))
        # Approvers decide a read: the caller's own client is never asked (no back-channel).
        unasked = replace(ctx.client, elicitation=False)
        asking = replace(ctx, decision=held, elicit=None, client=unasked)
        tool = replace(READ_TOOL, server=server)
        outcome = await self._held.hold(tool, {"server": server, "uri": uri}, asking)
        if isinstance(outcome, ToolResult):
            raise ResourceDenied(uri, self._not_read(uri, outcome), data=outcome.meta)
        if not isinstance(outcome, Approved):  # a standing grant covers it: nothing was held
            granted = replace(ctx, decision=replace(decision, grant=outcome.grant_id))
            return await self._observed_read(uri, server, granted, read)
        run = replace(ctx, call_id=outcome.call_id)
        try:
            result = await self._observed_read(uri, server, run, read)
        except BaseException as exc:
            with anyio.CancelScope(shield=True):
                await self._held.failed(outcome, exc)
            raise
        summary = read_summary(result)
        text = f"Read {uri}: {summary['contents']} contents, {summary['bytes']} bytes."
        await self._held.finished(outcome, ToolResult.text(text))
        return result

    @staticmethod
    def _not_read(uri: str, outcome: ToolResult) -> str:
        """What the client reads when a held read did not run now."""
        pending = (outcome.meta or {}).get("lockgate/pending") or {}
        if pending.get("state") in _WAITING:
            return (
                f"Not read yet: reading {uri} waits for an approver's decision (approval id "
                f"{pending.get('id')}). Read it again later: once approved, it is read."
            )
        return outcome.first_text()

    async def _refuse_read(
        self, tool: ToolDef, args: Mapping[str, Any], ctx: CallContext, message: str | Refusal
    ) -> ToolResult:
        """A held read refused before it was held (too many waiting), on record."""
        decision = ctx.decision
        assert decision is not None  # decided in read_resource
        uri = str(args.get("uri", ""))
        message = message.message if isinstance(message, Refusal) else message
        await self._record(events.resource_denied(uri, tool.server, ctx, decision, message))
        return ToolResult.error(message)
