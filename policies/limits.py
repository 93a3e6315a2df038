"""A rule's ``limit``: its YAML model (``{rate: 60/min, per: principal, burst: 10}``) and
the `RateLimit` it compiles to.

- ``rate``: ``N/unit`` with unit ``s``, ``min``, ``h`` or ``d`` (``second``, ``minute``,
  ``hour``, ``day`` and ``sec`` are accepted too): N calls per unit, sustained.
- ``per``: ``principal``, ``tool``, ``session``, or a list of them for a combined key
  (``[principal, tool]``: one counter per caller and tool). Unset: one counter for every call
  the rule matches, whoever makes it.
- ``burst``: how many calls may pass at once after an idle spell; default N. ``60/min`` lets 60
  calls through at once, then one a second; ``burst: 1`` spaces them evenly.

A limit applies to the tool calls a rule lets run at once, so only a tool rule with
``effect: allow`` may have one (see `toolsets.rate_limited`).
"""

from __future__ import annotations

import re
from typing import Annotated, Final

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    WithJsonSchema,
)
from pydantic_core import PydanticCustomError

from toolsets.rates import LIMIT_SCOPES, PERIODS, LimitScope, Rate, RateLimit

__all__ = ["MAX_COUNT", "RATE_PATTERN", "LimitModel", "RuleLimit", "compile_limit", "parse_rate"]

MAX_COUNT: Final = 1_000_000
"""The largest N of a rate and the largest burst."""
_UNITS: Final = {
    "s": "s",
    "sec": "s",
    "second": "s",
    "min": "min",
    "minute": "min",
    "h": "h",
    "hour": "h",
    "d": "d",
    "day": "d",
}
RATE_PATTERN: Final = r"^\s*([0-9]+)\s*/\s*(s|sec|second|min|minute|h|hour|d|day)\s*$"
_RATE_RE: Final = re.compile(RATE_PATTERN)
_EXPECTED: Final = "expected N/unit, e.g. 60/min (units: s, min, h, d)"


def parse_rate(text: object) -> tuple[int, float]:
    """``(N, seconds)`` of a rate such as ``"60/min"``.

    Raises:
        PydanticCustomError: ``text`` is not ``N/unit``, or N is not in 1..`MAX_COUNT`.
    """
    match = _RATE_RE.match(text) if isinstance(text, str) else None
    if match is None:
        raise PydanticCustomError("rate", f"{_EXPECTED}, got {text!r}")
    count = int(match.group(1))
    if not 1 <= count <= MAX_COUNT:
        raise PydanticCustomError("rate", f"N must be 1 to {MAX_COUNT:,}, got {count}")
    return count, PERIODS[_UNITS[match.group(2)]]


def _rate(value: object) -> object:
    parse_rate(value)
    return value


def _per(value: object) -> object:
    """A single scope becomes a one-item list; a repeated scope is an error."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and len(set(map(str, value))) != len(value):
        raise PydanticCustomError("per", "each of principal, tool, session at most once")
    return value


RateText = Annotated[
    str,
    BeforeValidator(_rate),
    WithJsonSchema(
        {
            "type": "string",
            "pattern": RATE_PATTERN,
            "description": "N calls per unit, e.g. '60/min' (units: s, min, h, d).",
        }
    ),
]
Per = Annotated[
    list[LimitScope],
    BeforeValidator(_per),
    Field(min_length=1),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string", "enum": list(LIMIT_SCOPES)},
                {
                    "type": "array",
                    "items": {"type": "string", "enum": list(LIMIT_SCOPES)},
                    "minItems": 1,
                    "uniqueItems": True,
                },
            ],
            "description": "One counter per principal, tool or session, or per combination.",
        }
    ),
]


class LimitModel(BaseModel):
    """A rate limit on the calls a rule allows."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    rate: RateText = Field(description="N calls per unit, sustained: '60/min', '5/s', '1000/d'.")
    per: Per | None = Field(
        None,
        description=(
            "What one counter is kept per: principal, tool, session, or a list of them for a "
            "combined key. Unset: one counter for all the calls the rule matches."
        ),
    )
    burst: int | None = Field(
        None,
        ge=1,
        le=MAX_COUNT,
        description="Calls let through at once after an idle spell (default: the rate's N).",
    )


def _allow_only(limit: LimitModel, info: ValidationInfo) -> LimitModel:
    kind = next((k for k in ("resources", "prompts") if info.data.get(k)), None)
    if kind is not None:
        raise PydanticCustomError(
            "limit", f"a limit applies only to tool calls; this rule is about {kind}"
        )
    effect = info.data.get("effect")
    if effect is not None and effect != "allow":
        raise PydanticCustomError(
            "limit",
            f"a limit applies only to calls a rule allows; this rule's effect is {effect!r} "
            "(put the limit on an allow rule, or drop it)",
        )
    return limit


RuleLimit = Annotated[LimitModel, AfterValidator(_allow_only)]
"""A rule's ``limit``, validated after the rule's selectors and ``effect``: a tool rule's, and
its effect ``allow``."""


def compile_limit(rule_id: str, model: LimitModel | None) -> RateLimit | None:
    """The `RateLimit` of rule ``rule_id`` (None when it has no limit)."""
    if model is None:
        return None
    count, period = parse_rate(model.rate)
    burst = model.burst if model.burst is not None else count
    rate = Rate(count=count, period=period, burst=burst)
    return RateLimit(rule_id=rule_id, rate=rate, per=tuple(model.per or ()))
