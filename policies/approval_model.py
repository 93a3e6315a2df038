"""The approval options of a policy file: who decides, for how long, in which stages, how far
an approval may reach (grants) and who may break glass."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, ValidationInfo, WithJsonSchema, field_validator
from pydantic_core import PydanticCustomError

from policies._fields import Strict, checked, pattern_problem
from policies.durations import DURATION_PATTERN, parse_duration
from toolsets.decision import DecisionKind, GrantScope

__all__ = ["ApprovalModel", "ApprovalStageModel", "Approver", "Duration"]

_APPROVER = r"^(caller|role:\S+|user:\S+)$"


def _duration(value: object) -> float:
    try:
        return parse_duration(value)
    except ValueError as exc:
        raise PydanticCustomError("duration", str(exc)) from None


Duration = Annotated[
    float,
    BeforeValidator(_duration),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "number", "minimum": 0},
                {"type": "string", "pattern": DURATION_PATTERN},
            ],
            "description": "Seconds, or a duration such as '500ms', '50s', '15m', '1h', '1d'.",
        }
    ),
]
Approver = Annotated[
    str,
    checked(
        pattern_problem(_APPROVER, "approver (use 'caller', 'role:NAME' or 'user:ID')"), "approver"
    ),
    WithJsonSchema(
        {
            "type": "string",
            "pattern": _APPROVER,
            "description": "'caller' (the calling user), 'role:NAME' or 'user:ID'.",
        }
    ),
]


_GLASS = r"^(role:\S+|user:\S+)$"
GlassEntry = Annotated[
    str,
    checked(
        pattern_problem(_GLASS, "break-glass entry (use 'role:NAME' or 'user:ID')"), "break_glass"
    ),
    WithJsonSchema(
        {
            "type": "string",
            "pattern": _GLASS,
            "description": "'role:NAME' or 'user:ID' (never 'caller').",
        }
    ),
]


def _listed(value: object) -> object:
    return [value] if isinstance(value, str) else value


GlassEntries = Annotated[
    list[GlassEntry],
    BeforeValidator(_listed),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string", "pattern": _GLASS},
                {"type": "array", "items": {"type": "string", "pattern": _GLASS}},
            ],
            "description": "'role:NAME' or 'user:ID' (never 'caller'), or a list of them.",
        }
    ),
]


class ApprovalStageModel(Strict):
    """One stage of a staged approval: ``min`` different people among ``approvers`` approve."""

    approvers: list[Approver] = Field(
        min_length=1, description="Who may vote in this stage ('caller': the caller may too)."
    )
    min: int = Field(1, ge=1, description="How many different people must approve (default 1).")

    @field_validator("min")
    @classmethod
    def _reachable(cls, value: int, info: ValidationInfo) -> int:
        approvers = info.data.get("approvers") or []
        if any(a == "caller" or a.startswith("role:") for a in approvers):
            return value
        if approvers and value > len(set(approvers)):
            raise PydanticCustomError(
                "stage_min",
                f"min {value} can never be reached: the stage names {len(set(approvers))} "
                "user(s); name more users or a role, or lower min",
            )
        return value


class ApprovalModel(Strict):
    """Approval options; every field unset falls back to the file's defaults, then built-ins."""

    approvers: list[Approver] | None = Field(None, description="Who may decide.")
    expires: Duration | None = Field(None, description="Until an undecided request expires.")
    hold: Duration | None = Field(
        None, description="How long the call is held open for a decision."
    )
    decisions: (
        Annotated[list[DecisionKind], Field(min_length=1, json_schema_extra={"uniqueItems": True})]
        | None
    ) = Field(None, description="Answers an approver may give.")
    grants: (
        Annotated[list[GrantScope], Field(min_length=1, json_schema_extra={"uniqueItems": True})]
        | None
    ) = Field(
        None,
        description=(
            "How far an approval may reach: once (this call; must be listed), session (later "
            "calls of this rule in the caller's session), tool (later calls of this rule on "
            "the tool, optionally by this caller only), each for up to grant_max. Default [once]."
        ),
    )
    grant_max: Duration | None = Field(
        None, description="The longest a session or tool grant may last (default 1h)."
    )
    stages: list[ApprovalStageModel] | None = Field(
        None,
        description=(
            "Staged (M-of-N) approval, decided in order; the call is approved when the last "
            "stage has its min votes. [] : one decision by any of approvers."
        ),
    )
    break_glass: GlassEntries | None = Field(
        None,
        description=(
            "Who may approve at once, skipping remaining stages, giving a reason: one entry "
            "or a list."
        ),
    )
    as_task: Literal["auto", "always", "never"] | None = Field(
        None,
        description=(
            "Answer a held call with a task for a client that asked for one: auto (default: "
            "unless the caller decides in-band), always, never (hold the request as without "
            "tasks)."
        ),
    )

    @field_validator("grants")
    @classmethod
    def _grants(cls, value: list[GrantScope] | None) -> list[GrantScope] | None:
        if value is not None and "once" not in value:
            raise PydanticCustomError(
                "grants", "grants must include 'once' (a plain approval of the one call)"
            )
        if value is not None and len(set(value)) != len(value):
            raise PydanticCustomError("grants", "grants lists a scope twice")
        return value

    @field_validator("grant_max")
    @classmethod
    def _grant_max(cls, value: float | None) -> float | None:
        if value is not None and value <= 0:
            raise PydanticCustomError("grant_max", "grant_max must be longer than 0s")
        return value

    @field_validator("stages")
    @classmethod
    def _stages(
        cls, value: list[ApprovalStageModel] | None, info: ValidationInfo
    ) -> list[ApprovalStageModel] | None:
        if value and "edit" in (info.data.get("decisions") or []):
            raise PydanticCustomError(
                "stages",
                "stages cannot offer 'edit' (the votes approve the arguments as held): "
                "drop edit from decisions",
            )
        return value
