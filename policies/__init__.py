"""The policy engine: YAML policy files compiled into fast matchers and CEL conditions.

Load files with `PolicyEngine.load`, hold the current engine in a `PolicyHolder` (atomic reloads,
optional file watching) and ask it for a `Decision` per listing (`evaluate_visibility`) or per
call (`evaluate_call`), and over resources and prompts (``engine.resources``).
"""

from policies.decider import PolicyDecider
from policies.durations import format_duration, parse_duration
from policies.engine import PolicyEngine
from policies.groups import GROUP_TOOL_PREFIX, group_tool_name
from policies.holder import PolicyHolder
from policies.resource_policy import ResourcePolicy
from policies.rules import CompiledRule
from policies.session import SessionState
from policies.verdicts import FAIL_CLOSED_MESSAGE
from toolsets.decision import (
    ALL_DECISION_KINDS,
    DEFAULT_APPROVAL,
    EFFECT_RANK,
    ApprovalOptions,
    Decision,
    DecisionKind,
    Effect,
    ShadowMatch,
)

__all__ = [
    "ALL_DECISION_KINDS",
    "DEFAULT_APPROVAL",
    "EFFECT_RANK",
    "FAIL_CLOSED_MESSAGE",
    "GROUP_TOOL_PREFIX",
    "ApprovalOptions",
    "CompiledRule",
    "Decision",
    "DecisionKind",
    "Effect",
    "PolicyDecider",
    "PolicyEngine",
    "PolicyHolder",
    "ResourcePolicy",
    "SessionState",
    "ShadowMatch",
    "format_duration",
    "group_tool_name",
    "parse_duration",
]
