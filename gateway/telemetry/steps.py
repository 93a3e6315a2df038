"""`StepSpans`: the OpenTelemetry side of `toolsets.traced.StepTracer`: one internal span per
step of the chain (``lockgate.policy``...), a client span for the call to the tool's server
(``tools/call {upstream tool}``), and the decision written onto the call's server span."""

from __future__ import annotations

from collections.abc import Mapping
from contextvars import Token
from types import TracebackType
from typing import Final

from opentelemetry.context import Context, attach, detach
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, set_span_in_context
from opentelemetry.util.types import AnyValue

from gateway.telemetry import attributes as attr
from gateway.telemetry.current import call_span
from gateway.telemetry.lean import LeanTracer
from gateway.telemetry.propagation import LazyCarrier
from toolsets.context import CallContext
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef

__all__ = ["SCRIPT_SPAN", "UPSTREAM_STEP", "StepSpans"]

_DECIDED_BY: Final = frozenset({"approval", "upstream"})
"""The steps at which the call's decision is written onto its server span."""

SCRIPT_SPAN: Final = "lockgate.script"
"""A script tool's run (its upstream step), named ``lockgate.script {tool}``."""
UPSTREAM_STEP: Final = "upstream"
"""The step that calls the tool's server: a client span named like the MCP request it sends."""


class _Open:
    """One step span (`toolsets.traced.StepSpan`), the current span while entered (as the SDK's
    ``start_as_current_span``: an exception leaving it is recorded on it), ended on leaving."""

    __slots__ = ("_token", "carrier", "span")

    def __init__(self, span: Span) -> None:
        self.span = span
        self.carrier: Mapping[str, str] = LazyCarrier(span)
        self._token: Token[Context] | None = None

    def __enter__(self) -> _Open:
        self._token = attach(set_span_in_context(self.span))
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._token is not None:
            detach(self._token)
        if isinstance(exc, Exception) and self.span.is_recording():
            self.span.record_exception(exc)
            self.span.set_status(Status(StatusCode.ERROR, f"{type(exc).__name__}: {exc}"))
        self.span.end()

    def finish(self, result: ToolResult) -> None:
        if result.is_error:
            self.span.set_attribute(attr.ERROR_TYPE, "tool_error")
            self.span.set_status(Status(StatusCode.ERROR))


def _decided(ctx: CallContext) -> None:
    """Write the call's decision onto its server span (once the policy step has decided)."""
    decision = ctx.decision
    if decision is None:
        return
    root = call_span()
    if not root.is_recording():
        return
    root.set_attribute(attr.DECISION_EFFECT, decision.effect)
    if decision.rule_id is not None:
        root.set_attribute(attr.RULE, decision.rule_id)
    if decision.grant is not None:
        root.set_attribute(attr.GRANT, decision.grant)


class StepSpans:
    """Implements `toolsets.traced.StepTracer` with an OpenTelemetry tracer; the upstream step
    of a tool of one of ``scripts`` (script servers) is the script's run, not an MCP call."""

    def __init__(self, tracer: LeanTracer, scripts: frozenset[str] = frozenset()) -> None:
        self.tracer = tracer
        self.scripts = scripts

    def step(self, step: str, name: str, tool: ToolDef, ctx: CallContext) -> _Open:
        if step in _DECIDED_BY:  # the decision is final there (inspection may escalate it)
            _decided(ctx)
        if step == UPSTREAM_STEP and tool.server in self.scripts:
            span_name, kind = f"{SCRIPT_SPAN} {name}", SpanKind.INTERNAL
            attributes: dict[str, AnyValue] = {
                attr.STEP: "script",
                attr.TOOL_NAME: name,
                attr.SERVER: tool.server,
            }
        elif step == UPSTREAM_STEP:
            span_name, kind = f"tools/call {tool.upstream_name}", SpanKind.CLIENT
            attributes = {
                attr.MCP_METHOD: "tools/call",
                attr.TOOL_NAME: tool.upstream_name,
                attr.OPERATION: "execute_tool",
                attr.SERVER: tool.server,
            }
        else:
            span_name, kind = f"lockgate.{step}", SpanKind.INTERNAL
            attributes = {attr.STEP: step, attr.TOOL_NAME: name}
        return _Open(self.tracer.start_span(span_name, None, kind, attributes))
