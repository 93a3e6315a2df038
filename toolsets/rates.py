"""Rate limits as the call chain sees them: the frozen `Rate` and `RateLimit` a policy rule
carries on its `Decision`, and the `RateCounter` protocol that counts calls against them.

A rate is enforced with GCRA (the generic cell rate algorithm, a leaky bucket kept as one
timestamp per key): ``count`` calls per ``period`` seconds, at most ``burst`` of them at once.
Each call that is let through pushes the key's *theoretical arrival time* (TAT) one interval
(``period / count``) further; a call is let through while that would leave the TAT at most
``burst`` intervals ahead of now. A refused call changes nothing, and a key whose TAT has
passed holds no information (it can be dropped). One statement can implement `RateCounter.hit`
on a shared database: ``INSERT ... ON CONFLICT (key) DO UPDATE SET tat = ... WHERE ...``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal, Protocol

if TYPE_CHECKING:  # a `Decision` carries limits, and a `CallContext` carries the decision
    from toolsets.context import CallContext
    from toolsets.tooldef import ToolDef

__all__ = [
    "LIMIT_SCOPES",
    "PERIODS",
    "LimitScope",
    "Rate",
    "RateCounter",
    "RateLimit",
    "RateVerdict",
]

LimitScope = Literal["principal", "tool", "session"]
"""What one counter is kept per: the caller, the exposed tool, or the caller's session."""
LIMIT_SCOPES: Final[tuple[LimitScope, ...]] = ("principal", "tool", "session")

PERIODS: Final[dict[str, float]] = {"s": 1.0, "min": 60.0, "h": 3600.0, "d": 86400.0}
"""The units a rate is written in (``60/min``), in seconds."""
_EPSILON: Final = 1e-9
"""Float slack: a wait of 12.000000001 s is told as 12 s."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Rate:
    """``count`` calls per ``period`` seconds, at most ``burst`` of them at once.

    Attributes:
        count: Calls per period (the sustained rate).
        period: Seconds: 1, 60, 3600 or 86400 (``/s``, ``/min``, ``/h``, ``/d``).
        burst: Calls let through at once after an idle spell (the bucket's depth).
    """

    count: int
    period: float
    burst: int

    @property
    def interval(self) -> float:
        """Seconds one call occupies: ``period / count``."""
        return self.period / self.count

    def __str__(self) -> str:
        unit = next((u for u, s in PERIODS.items() if s == self.period), f"{self.period:g}s")
        return f"{self.count}/{unit}"


@dataclass(frozen=True, slots=True)
class RateVerdict:
    """What a counter answered for one call.

    Attributes:
        allowed: True when the call was counted and may run.
        retry_after: For a refused call, seconds until one would be let through (0 otherwise).
    """

    allowed: bool
    retry_after: float = 0.0

    @property
    def retry_seconds(self) -> int:
        """``retry_after`` rounded up to whole seconds, at least 1 (what callers are told)."""
        return max(1, math.ceil(self.retry_after - _EPSILON))


@dataclass(frozen=True, slots=True, kw_only=True)
class RateLimit:
    """A rule's ``limit``: one counter per distinct value of ``per`` (one for all when empty).

    Attributes:
        rule_id: The rule that declares it (keys are per rule: rules never share counters).
        rate: How many calls per period, and how many at once.
        per: What the counter is kept per, in the order written; empty: one for the rule.
    """

    rule_id: str
    rate: Rate
    per: tuple[LimitScope, ...] = ()

    def key(self, tool: ToolDef, ctx: CallContext) -> str:
        """The counter key of a call: the rule and the call's values of ``per``.

        A principal is its tenant and id; a session is keyed as session state is, by principal
        and session id (calls without a session id share their principal's one).
        """
        parts: list[str | None] = [self.rule_id]
        principal = ctx.principal
        for scope in self.per:
            if scope == "tool":
                parts += ("tool", tool.name)
            elif scope == "principal":
                parts += ("principal", principal.tenant, principal.id)
            else:
                parts += ("session", principal.tenant, principal.id, ctx.session_id or "")
        return json.dumps(parts, separators=(",", ":"))

    def describe(self) -> str:
        """``60/min per principal, tool`` (and ``burst N`` when it is not the count)."""
        text = str(self.rate)
        if self.per:
            text += f" per {', '.join(self.per)}"
        if self.rate.burst != self.rate.count:
            text += f", burst {self.rate.burst}"
        return text

    def to_json(self) -> dict[str, object]:
        """The limit as it appears in ``_meta``, events and ``policy explain --json``."""
        rate = self.rate
        return {
            "rule_id": self.rule_id,
            "rate": str(rate),
            "per": list(self.per),
            "burst": rate.burst,
        }


class RateCounter(Protocol):
    """Counts calls per key (in memory embedded, in a shared database across replicas)."""

    async def hit(self, key: str, rate: Rate, now: float) -> RateVerdict:
        """Count one call under ``key`` at ``now`` (seconds since the epoch) if ``rate`` lets
        it through (GCRA, see the module docstring); a refused call is not counted. Atomic
        per key: concurrent hits on one key never let more calls through than the rate."""
        ...
