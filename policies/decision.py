"""Effects and the frozen `Decision` the engine returns (values of `toolsets.decision`)."""

from toolsets.decision import (
    ALL_DECISION_KINDS,
    DEFAULT_APPROVAL,
    EFFECT_RANK,
    ApprovalOptions,
    Decision,
    DecisionKind,
    Effect,
)

__all__ = [
    "ALL_DECISION_KINDS",
    "DEFAULT_APPROVAL",
    "EFFECT_RANK",
    "ApprovalOptions",
    "Decision",
    "DecisionKind",
    "Effect",
]
