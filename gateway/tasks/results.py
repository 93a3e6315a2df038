"""`TaskResults`: an upstream task's result through the chain's result steps, once, when the
task completes (not on every ``tasks/result`` read): what a direct call's result passes on its
way up passes here too, in the same order.

1. the output-schema check (a tool with an ``outputSchema`` must answer structured content
   matching it; the SDK client makes the same check of a direct call's result);
2. resource links and embedded resources served as the gateway's (``lockgate://``, ``ui://``:
   `toolsets.resource_links.ResourceLinksToolset`, with the server's prefix);
3. the chain's result steps proper (`gateway.wiring.chain.result_steps`): content inspection
   of results (redaction, findings, a withheld result) and the ``tool.result`` event, which
   the audit log records, carrying the creating call's ``call_id`` and decision.

That ``tool.result`` is the call's only one (the call's creation of the task has none:
``task.created`` tells it): a task that fails or is cancelled instead has its error result
passed through the same steps (`TaskResults.ended`). The event masks the values at the
decision's ``redact`` paths of the call's arguments (`TaskRecord.redacted`) wherever the
result quotes them, as a direct call's does; it carries no arguments (``tool.call`` does).

The size limit is the transport's: the result is fetched over the same pipe or HTTP client as
any other answer, under the server's ``max_result_bytes``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

import jsonschema_rs
import mcp_types as types

from gateway.events.redact import mask_values
from gateway.tasks.record import TaskRecord
from toolsets.abstract import Toolset
from toolsets.context import CallContext, Principal
from toolsets.decision import Decision
from toolsets.events import CallObserver
from toolsets.resource_links import ResourceLinksToolset
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef

__all__ = ["ResultSteps", "TaskResults", "decision_of", "schema_problem"]

ResultSteps = Callable[[Toolset, CallObserver], Toolset]
"""Wraps a toolset in the chain's result steps, reporting to the observer given."""


def decision_of(decision: Decision | None) -> dict[str, Any] | None:
    """What a task record keeps of its call's decision (for its result event)."""
    if decision is None:
        return None
    return {"effect": decision.effect, "rule_id": decision.rule_id, "redact": list(decision.redact)}


def schema_problem(tool: ToolDef, result: ToolResult) -> str | None:
    """Why ``result`` breaks ``tool``'s output schema; None when it keeps it (or has none)."""
    schema = tool.output_schema
    if schema is None or result.is_error:
        return None
    structured = result.wire.get("structuredContent")
    if structured is None:
        return f"Tool {tool.name!r} has an output schema; its task returned no structured content."
    try:
        validator: Any = jsonschema_rs.validator_for(dict(schema))
    except (ValueError, jsonschema_rs.ValidationError):
        return None  # a schema that does not compile: the upstream remains its judge
    errors = list(validator.iter_errors(structured))[:1]
    if not errors:
        return None
    return f"Invalid structured content returned by tool {tool.name!r}: {errors[0].message}"


class _Stored(Toolset):
    """Answers with one stored result: the bottom of the result steps."""

    def __init__(self, result: ToolResult) -> None:
        self._result = result

    async def get_tools(self, ctx: CallContext) -> dict[str, ToolDef]:
        return {}

    async def call_tool(
        self, name: str, args: Mapping[str, Any], ctx: CallContext, tool: ToolDef
    ) -> ToolResult:
        return self._result


class _Finished:
    """A `CallObserver` that reports only the end of the call (its ``tool.call`` went out when
    the task was created), timed from the task's creation, with the ``redacted`` values masked
    in the result it reports (the result the caller reads is not changed)."""

    def __init__(self, observer: CallObserver, record: TaskRecord) -> None:
        self._observer = observer
        self._created_at = record.created_at
        self._redacted = record.redacted

    def started(self, tool: ToolDef, args: Mapping[str, Any], ctx: CallContext) -> None:
        """Nothing: the call started when the task was created."""

    def finished(
        self,
        tool: ToolDef,
        args: Mapping[str, Any],
        ctx: CallContext,
        result: ToolResult,
        duration_ms: float,
    ) -> None:
        elapsed = (time.time() - self._created_at) * 1000
        shown = _masked(result, self._redacted)
        self._observer.finished(tool, args, ctx, shown, max(elapsed, duration_ms))


def _masked(result: ToolResult, redacted: tuple[str, ...]) -> ToolResult:
    """``result`` with each of ``redacted`` masked in its content and structured content."""
    if not redacted:
        return result
    wire = dict(result.wire)
    for key in ("content", "structuredContent"):
        if wire.get(key) is not None:
            wire[key] = mask_values(wire[key], redacted)
    return ToolResult.from_wire(wire)


class TaskResults:
    """Finished tasks' results through the result steps (see the module docstring).

    Args:
        catalogue: The upstream tools by exposed name (quarantined ones included).
        steps: The chain's result steps.
        observer: Where ``tool.result`` goes.
        prefixes: Each server's exposed prefix (its resource URIs' namespace).
    """

    def __init__(
        self,
        catalogue: Toolset,
        steps: ResultSteps,
        observer: CallObserver,
        prefixes: Mapping[str, str],
    ) -> None:
        self._catalogue = catalogue
        self._steps = steps
        self._observer = observer
        self._prefixes = prefixes

    async def deliver(self, record: TaskRecord, raw: Mapping[str, Any]) -> TaskRecord:
        """``record`` completed with ``raw`` (the upstream's ``CallToolResult``) as processed,
        or failed when the result cannot be delivered (malformed, off its output schema, or
        its tool is no longer served: `ended` reports that failure)."""
        ctx = _context(record)
        tool = (await self._catalogue.get_tools(ctx)).get(record.tool)
        if tool is None:
            return _failed(record, f"Tool {record.tool!r} is no longer served; result withheld.")
        try:
            result = ToolResult.from_wire(raw)
        except ValueError as exc:
            return _failed(record, f"Server {tool.server!r} sent a malformed task result: {exc}")
        problem = schema_problem(tool, result)
        if problem is not None:
            return _failed(record, problem)
        processed = await self._passed(record, tool, result, ctx)
        return record.moved("completed", record.status_message, result=dict(processed.wire))

    async def ended(self, record: TaskRecord) -> None:
        """Report ``record``, an upstream's task that failed or was cancelled, as its call's
        error result (through the result steps, as `deliver` reports a completed one)."""
        ctx = _context(record)
        tool = (await self._catalogue.get_tools(ctx)).get(record.tool) or ToolDef(
            name=record.tool,
            server=record.upstream or "",
            upstream_name=record.upstream_tool or record.tool,
        )
        fallback = "Task cancelled" if record.status == "cancelled" else "Task failed"
        message = (record.error or {}).get("message") or record.status_message or fallback
        await self._passed(record, tool, ToolResult.error(str(message)), ctx)

    async def _passed(
        self, record: TaskRecord, tool: ToolDef, result: ToolResult, ctx: CallContext
    ) -> ToolResult:
        """``result`` through the result steps, reported as the end of ``record``'s call."""
        inner = ResourceLinksToolset(_Stored(result), self._prefixes.get(tool.server, tool.server))
        steps = self._steps(inner, _Finished(self._observer, record))
        return await steps.call_tool(record.tool, {}, ctx, tool)


def _failed(record: TaskRecord, why: str) -> TaskRecord:
    error = {"code": types.INTERNAL_ERROR, "message": why}
    return record.moved("failed", why, error=error, result=None)


def _context(record: TaskRecord) -> CallContext:
    """The creating call's context, as far as the record keeps it."""
    kept = record.decision or {}
    decision = None
    if kept:
        decision = Decision(
            effect=kept.get("effect", "allow"),
            rule_id=kept.get("rule_id"),
            reason="the call that created the task",
            redact=tuple(kept.get("redact") or ()),
        )
    principal = Principal(id=record.principal, tenant=record.tenant)
    call_id = record.call_id or record.id
    return CallContext(
        principal=principal, session_id=record.session_id, call_id=call_id, decision=decision
    )
