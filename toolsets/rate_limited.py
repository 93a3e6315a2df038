"""`RateLimitedToolset`: calls over a rule's rate limit are refused before they run.

It sits right below `PolicyToolset` and above `ApprovalRequiredToolset`: the decision is made
(``ctx.decision`` carries the limits of every matching rule), and nothing has been held,
stored or sent upstream yet. Only calls that run at once count, those the policy allows:

- a denied or hidden call never reaches this step;
- a held (``ask``) or deferred (``defer``) call is not counted: it runs only once a person or a
  worker acts, the pending store already bounds how many wait (``max_pending_per_principal``),
  and counting would count each re-issue of a held call and each 2026-07-28 answer round again;
  an approved call runs below this step, so it is never refused after its approval;
- a refused call is not counted either (GCRA changes nothing on a refusal), nor is it counted in
  its session's history (`CallRefused`): it never ran.

Limits are checked in rule order and the first that refuses answers; limits checked before it
have counted the attempt (a conservative error: more refusals, never more calls). Limits of
``mode: shadow`` rules are counted like the others after the enforced ones let the call
through; one that would refuse it only marks its `ShadowMatch` (``retry_after``), which the
call's events and the audit log carry, and the call goes on.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, Final, Protocol

from toolsets.abstract import Toolset
from toolsets.context import CallContext
from toolsets.decision import Decision, ShadowMatch
from toolsets.errors import CallRefused
from toolsets.rates import RateCounter, RateLimit, RateVerdict
from toolsets.refusal import Refusal, Unblock, refusal_result
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef
from toolsets.wrapper import WrapperToolset

__all__ = ["LIMIT_META", "RETRY_AFTER_META", "LimitObserver", "RateLimitedToolset", "refusal"]

RETRY_AFTER_META: Final = "lockgate/retry_after"
"""``_meta`` key of a refused call's result: whole seconds until a retry may pass."""
LIMIT_META: Final = "lockgate/rate_limit"
"""``_meta`` key of a refused call's result: the limit (rule, rate, per, burst)."""


class LimitObserver(Protocol):
    """Told about each call a limit refused (the gateway publishes ``tool.rate_limited``).

    It may neither block nor fail the call.
    """

    def limited(
        self,
        tool: ToolDef,
        args: Mapping[str, Any],
        ctx: CallContext,
        limit: RateLimit,
        result: ToolResult,
    ) -> None: ...


def refusal(limit: RateLimit, verdict: RateVerdict, tool: ToolDef | None = None) -> ToolResult:
    """The error result of a call ``limit`` refused: the rule, the limit, when to retry (also as
    ``_meta["lockgate/refusal"]``, kind ``rate_limited``)."""
    seconds = verdict.retry_seconds
    message = (
        f"Rate limit exceeded: rule {limit.rule_id!r} allows {limit.describe()}; "
        f"retry after {seconds} s."
    )
    refused = Refusal(
        kind="rate_limited",
        message=message,
        rule=limit.rule_id,
        retry_after=seconds,
        unblock=Unblock(action="retry_after"),
        details={"limit": limit.to_json()},
    )
    meta = {RETRY_AFTER_META: seconds, LIMIT_META: limit.to_json()}
    return refusal_result(refused, tool=tool, meta=meta)


class RateLimitedToolset(WrapperToolset):
    """Counts allowed calls against their rules' limits; over a limit, answers with `refusal`.

    Args:
        wrapped: The rest of the chain (approval, events, upstream).
        counter: Where calls are counted (in memory, or shared by replicas).
        observer: Told about each refused call.
        clock: Seconds since the epoch (wall time, so replicas sharing a counter agree).
    """

    def __init__(
        self,
        wrapped: Toolset,
        counter: RateCounter,
        observer: LimitObserver,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(wrapped)
        self.counter = counter
        self.observer = observer
        self.clock = clock

    def passes_through(self, ctx: CallContext) -> bool:
        """Whether the call is handed on uncounted: not allowed, or allowed with no limit."""
        decision = ctx.decision
        return (
            decision is None
            or decision.effect != "allow"
            or not (decision.limits or decision.shadow)
        )

    async def call_tool(
        self, name: str, args: Mapping[str, Any], ctx: CallContext, tool: ToolDef
    ) -> ToolResult:
        decision = ctx.decision
        if decision is not None and not self.passes_through(ctx):
            ctx = await self._count(decision, args, ctx, tool)
        return await self.wrapped.call_tool(name, args, ctx, tool)

    async def _count(
        self, decision: Decision, args: Mapping[str, Any], ctx: CallContext, tool: ToolDef
    ) -> CallContext:
        """``ctx`` with its shadow limits' outcome; raises `CallRefused` over a limit."""
        now = self.clock()
        for limit in decision.limits:
            verdict = await self.counter.hit(limit.key(tool, ctx), limit.rate, now)
            if not verdict.allowed:
                result = refusal(limit, verdict, tool)
                self.observer.limited(tool, args, ctx, limit, result)
                raise CallRefused(result)
        shadow = [await self._shadow(match, tool, ctx, now) for match in decision.shadow]
        if all(after is before for after, before in zip(shadow, decision.shadow, strict=True)):
            return ctx  # no shadow limit would have refused it: the decision stands as it is
        return replace(ctx, decision=replace(decision, shadow=tuple(shadow)))

    async def _shadow(
        self, match: ShadowMatch, tool: ToolDef, ctx: CallContext, now: float
    ) -> ShadowMatch:
        """``match``, marked with ``retry_after`` when its limit would have refused the call."""
        if match.limit is None:
            return match
        verdict = await self.counter.hit(match.limit.key(tool, ctx), match.limit.rate, now)
        return match if verdict.allowed else replace(match, retry_after=verdict.retry_seconds)
