"""`InspectedToolset`: content inspection of a call's arguments (before it is held or forwarded)
or of its result (before anyone above sees it).

The chain holds it twice: on ``arguments`` right below the policy step, where a finding whose
action is ``ask`` or ``deny`` escalates the call's `Decision` (the approval step below then holds
it, or it is refused on record), and ``redact`` masks spans before the upstream sees them; on
``results`` right above the tools, below the events step, so the ``tool.result`` event, the audit
log and the agent only ever see the redacted result. What the inspectors are lives in the
gateway (`gateway.inspectors`); this step only acts on their `Verdict`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final, Generic, Literal, Protocol, TypeVar

from toolsets.abstract import Toolset
from toolsets.context import CallContext
from toolsets.decision import EFFECT_RANK, Decision
from toolsets.findings import Direction, Finding, FindingAction, strongest
from toolsets.labels import LabelSink
from toolsets.policy import Refuser
from toolsets.refusal import Refusal, Unblock, refusal_result
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef
from toolsets.wrapper import WrapperToolset

__all__ = ["FINDINGS_META", "InspectedToolset", "Inspection", "Verdict", "escalated"]

FINDINGS_META: Final = "lockgate/findings"
"""``_meta`` key of a result's findings (kind, inspector, where and span: never the text)."""

T = TypeVar("T")

_NO_POLICY: Final = Decision(effect="allow", rule_id=None, reason="no policy decided this call")


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict(Generic[T]):
    """What the inspectors made of one side of a call.

    Attributes:
        content: The arguments or result to pass on: spans whose action is ``redact`` masked.
        masked: The same with every finding's span masked (what records of a refusal carry).
        findings: Every finding, in the order found.
        labels: Session labels to add, by the source that brought them (``inspector:NAME``).
        reason: For ``ask`` and ``deny``: a sentence naming the inspectors and kinds.
    """

    content: T
    masked: T
    findings: tuple[Finding, ...] = ()
    labels: Mapping[str, frozenset[str]] = field(default_factory=dict)
    reason: str = ""

    @property
    def action(self) -> FindingAction:
        """The strongest action among the findings (a shadow finding's does not count)."""
        return strongest(finding.action for finding in self.findings if not finding.shadow)


class Inspection(Protocol):
    """The configured inspectors as the chain sees them (`gateway.inspectors.Inspection`)."""

    def covers(self, tool: ToolDef, direction: Direction) -> bool:
        """Whether any inspector looks at this side of calls of ``tool``."""
        ...

    async def arguments(
        self, tool: ToolDef, args: Mapping[str, Any], ctx: CallContext
    ) -> Verdict[Mapping[str, Any]]:
        """Inspect a call's arguments (bounded in time; an error is a finding or nothing)."""
        ...

    async def result(
        self, tool: ToolDef, result: ToolResult, ctx: CallContext
    ) -> Verdict[ToolResult]:
        """Inspect a call's result (bounded in time; an error is a finding or nothing)."""
        ...


def escalated(decision: Decision | None, verdict: Verdict[Any]) -> Decision:
    """``decision`` carrying the verdict's findings; its effect raised to ``ask``/``deny`` when
    the verdict's action is stronger than the policy's effect."""
    base = decision or _NO_POLICY
    decided = replace(base, findings=base.findings + verdict.findings)
    action = verdict.action
    if action in ("ask", "deny") and EFFECT_RANK[action] > EFFECT_RANK[base.effect]:
        inspectors = sorted(
            {f.inspector for f in verdict.findings if f.action == action and not f.shadow}
        )
        rule = "inspector:" + ",".join(inspectors)
        return replace(decided, effect=action, rule_id=rule, reason=verdict.reason, message=None)
    return decided


class InspectedToolset(WrapperToolset):
    """Runs ``inspection`` on one ``direction`` of the calls it covers and acts on the verdict.

    Arguments: labels added, spans redacted, the decision escalated (``deny``: refused here via
    ``refuse``, on record with masked arguments). Results: labels added, spans redacted, the
    findings in ``_meta["lockgate/findings"]``; ``deny`` or ``ask`` withholds the result (the
    call has run: approval holds calls, not results, so ``ask`` on a result withholds it too).
    """

    def __init__(
        self,
        wrapped: Toolset,
        inspection: Inspection,
        *,
        direction: Direction,
        refuse: Refuser,
        labels: LabelSink | None = None,
    ) -> None:
        super().__init__(wrapped)
        self.inspection = inspection
        self.direction: Direction = direction
        self.refuse = refuse
        self.labels = labels

    async def call_tool(
        self, name: str, args: Mapping[str, Any], ctx: CallContext, tool: ToolDef
    ) -> ToolResult:
        if not self.inspection.covers(tool, self.direction):
            return await self.wrapped.call_tool(name, args, ctx, tool)
        if self.direction == "arguments":
            return await self._arguments(name, args, ctx, tool)
        result = await self.wrapped.call_tool(name, args, ctx, tool)
        return await self._result(tool, result, ctx)

    async def _arguments(
        self, name: str, args: Mapping[str, Any], ctx: CallContext, tool: ToolDef
    ) -> ToolResult:
        verdict = await self.inspection.arguments(tool, args, ctx)
        if not verdict.findings:
            return await self.wrapped.call_tool(name, args, ctx, tool)
        await self._label(ctx, verdict)
        ctx = replace(ctx, decision=escalated(ctx.decision, verdict))
        if verdict.action == "deny":
            refusal = _refusal(f"Refused: {verdict.reason}.", verdict, "change_arguments")
            return await self.refuse(tool, verdict.masked, ctx, refusal)
        return await self.wrapped.call_tool(name, verdict.content, ctx, tool)

    async def _result(self, tool: ToolDef, result: ToolResult, ctx: CallContext) -> ToolResult:
        verdict = await self.inspection.result(tool, result, ctx)
        if not verdict.findings:
            return result
        await self._label(ctx, verdict)
        found = {FINDINGS_META: [finding.to_json() for finding in verdict.findings]}
        if verdict.action in ("deny", "ask"):
            refusal = _refusal(f"The result was withheld: {verdict.reason}.", verdict, "none")
            return refusal_result(refusal, tool=tool, meta=found)
        answer = verdict.content
        return answer.with_meta({**(answer.meta or {}), **found})

    async def _label(self, ctx: CallContext, verdict: Verdict[Any]) -> None:
        if self.labels is None:
            return
        for source, labels in verdict.labels.items():
            await self.labels.add(ctx, labels, source)


def _refusal(
    message: str, verdict: Verdict[Any], unblock: Literal["change_arguments", "none"]
) -> Refusal:
    """The ``inspector`` refusal of ``verdict``: its message, the inspectors that stopped the
    call as the rule, the findings (kinds and spans) as details."""
    stopping = sorted(
        {f.inspector for f in verdict.findings if f.action in ("deny", "ask") and not f.shadow}
    )
    details = {"findings": [finding.to_json() for finding in verdict.findings]}
    rule = "inspector:" + ",".join(stopping)
    return Refusal(
        kind="inspector",
        message=message,
        rule=rule,
        unblock=Unblock(action=unblock),
        details=details,
    )
