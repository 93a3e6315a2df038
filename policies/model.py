"""The pydantic models of a policy file (the source of its JSON Schema)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import ConfigDict, Field, WithJsonSchema, field_validator, model_validator
from pydantic_core import PydanticCustomError

from policies._fields import Strict as _Strict
from policies._fields import checked as _checked
from policies._fields import pattern_problem as _pattern_problem
from policies.approval_model import ApprovalModel, ApprovalStageModel
from policies.cel_conditions import ALLOWED_VARIABLES, condition_problem
from policies.limits import RuleLimit
from policies.matchers import glob_problem, principal_entry_problem
from policies.messages import message_problem
from policies.preview import PreviewModel
from policies.resource_rules import SCOPED_FIELDS, PromptEffect, ResourceEffect, check_scope
from policies.scope_check import SCOPE_TOKEN, check_scopes
from policies.session_labels import LABEL_NAME_RE, label_problem
from policies.tool_labels import check_label_rule
from policies.uri_globs import UriGlob
from toolsets.decision import Effect
from toolsets.upstream.flags import FLAGS

__all__ = [
    "ApprovalModel",
    "ApprovalStageModel",
    "DefaultsModel",
    "FlagName",
    "GroupName",
    "PolicyFile",
    "RuleModel",
    "ToolName",
]


Glob = Annotated[
    str,
    _checked(glob_problem, "glob"),
    Field(
        description="Name glob: letters, digits, '_', '-', with '*', '?' and '[...]'.",
        json_schema_extra={"pattern": r"^[A-Za-z0-9_*?\[\]!-]+$"},
    ),
]
PrincipalEntry = Annotated[
    str,
    _checked(principal_entry_problem, "principal"),
    Field(description="A principal id (may use '*'), 'role:NAME', or either negated with '!'."),
]
CelExpression = Annotated[
    str,
    _checked(condition_problem, "cel"),
    Field(description=f"A CEL expression over {', '.join(sorted(ALLOWED_VARIABLES))}."),
]


def _flag_problem(value: str) -> str | None:
    return None if value in FLAGS else f"unknown flag {value!r} (known: {', '.join(FLAGS)})"


FlagName = Annotated[
    str,
    _checked(_flag_problem, "flag"),
    WithJsonSchema(
        {
            "type": "string",
            "enum": list(FLAGS),
            "description": "A warning flag lockgate puts on an upstream tool definition.",
        }
    ),
]

_REDACT = r"^args(\.[^.\s]+)+$"
_RULE_ID = r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}$"
_TOOL_NAME = r"^[A-Za-z0-9_-]{1,64}$"
_GROUP_NAME = r"^[a-z0-9_]{1,40}$"

RedactPath = Annotated[
    str,
    _checked(_pattern_problem(_REDACT, "redact path (use 'args.KEY[.KEY...]')"), "redact"),
    WithJsonSchema(
        {
            "type": "string",
            "pattern": _REDACT,
            "description": "A dotted argument path to mask in events, e.g. 'args.headers.token'.",
        }
    ),
]
RuleId = Annotated[
    str,
    _checked(
        _pattern_problem(_RULE_ID, "rule id (letters, digits and '_.:-', up to 100)"), "rule_id"
    ),
    WithJsonSchema({"type": "string", "pattern": _RULE_ID, "description": "Unique rule id."}),
]

ToolName = Annotated[
    str,
    _checked(
        _pattern_problem(_TOOL_NAME, "tool name (letters, digits, '_' and '-', up to 64)"),
        "tool_name",
    ),
    WithJsonSchema(
        {"type": "string", "pattern": _TOOL_NAME, "description": "An exposed tool name (no globs)."}
    ),
]
GroupName = Annotated[
    str,
    _checked(
        _pattern_problem(_GROUP_NAME, "group name (lower-case letters, digits, '_', up to 40)"),
        "group_name",
    ),
    WithJsonSchema({"type": "string", "pattern": _GROUP_NAME, "description": "A tool group name."}),
]

MessageText = Annotated[
    str,
    _checked(message_problem, "message"),
    Field(
        description=(
            "What the model reads when refused. Placeholders such as {args.NAME}, "
            "{session.calls}, {tool.name}, {principal.id} show the call's values, quoted and "
            "escaped; '{{' and '}}' are literal braces."
        )
    ),
]
ScopeName = Annotated[
    str,
    _checked(_pattern_problem(SCOPE_TOKEN, "OAuth scope (printable ASCII, no space)"), "scope"),
    WithJsonSchema(
        {
            "type": "string",
            "pattern": SCOPE_TOKEN,
            "description": "An OAuth scope, e.g. files:write.",
        }
    ),
]
RuleMode = Literal["enforce", "shadow"]
LabelName = Annotated[
    str,
    _checked(label_problem, "label"),
    WithJsonSchema(
        {
            "type": "string",
            "pattern": f"^{LABEL_NAME_RE.pattern}$",
            "description": "A data-flow label, e.g. private, untrusted, egress.",
        }
    ),
]


class DefaultsModel(_Strict):
    """What applies when no rule matches, and approval defaults for every rule."""

    effect: Effect | None = Field(None, description="Effect when no rule matches (default: ask).")
    reason: str | None = None
    message: MessageText | None = None
    approval: ApprovalModel | None = None
    hide_flagged: list[FlagName] | None = Field(
        None,
        description=(
            "Tools carrying any of these flags are hidden (not listed, calls answered as unknown) "
            "unless a matching rule lists the flag in accept_flags. Default: [injection-marker]; "
            "[] hides none. Across layered files the declared lists add up."
        ),
    )
    resources: ResourceEffect | None = Field(None, description="No resource rule matched.")
    prompts: PromptEffect | None = Field(None, description="No prompt rule matched.")


class RuleModel(_Strict):
    """One rule. It matches when every selector it has matches; unset selectors match anything."""

    model_config = ConfigDict(
        json_schema_extra={
            "anyOf": [
                {"required": ["effect"]},
                {"required": ["labels"]},
                {"required": ["sink_labels"]},
            ]
        }
    )

    id: RuleId
    description: str | None = None
    tools: list[Glob] | None = Field(None, min_length=1, description="Globs on exposed tool names.")
    servers: list[Glob] | None = Field(None, min_length=1, description="Globs on server names.")
    resources: list[UriGlob] | None = Field(
        None, min_length=1, description="URI globs: a resource rule."
    )
    prompts: list[Glob] | None = Field(
        None, min_length=1, description="Prompt name globs: a prompt rule."
    )
    principals: list[PrincipalEntry] | None = Field(None, min_length=1)
    when: CelExpression | None = Field(None, description="Matches only when this is true.")
    unless: CelExpression | None = Field(None, description="Does not match when this is true.")
    effect: Effect | None = Field(
        None, description="The rule's effect; required unless the rule only sets labels."
    )
    reason: str | None = Field(None, description="Why, shown to operators and approvers.")
    message: MessageText | None = None
    mode: RuleMode = Field(
        "enforce",
        description=(
            "'shadow': evaluated, never enforced; what it would have decided is recorded on "
            "the decision (and in events) only."
        ),
    )
    approval: ApprovalModel | None = None
    preview: PreviewModel | None = Field(
        None,
        description=(
            "ask only: a read-only tool the approvers see the result of beside the held call, "
            "run under policy as the caller; '{args.NAME}' in its args is the call's argument."
        ),
    )
    limit: RuleLimit | None = Field(
        None,
        description=(
            "A rate limit on the calls this rule allows, e.g. {rate: 60/min, per: principal}; "
            "a call over it is refused with when to retry (only on effect: allow)."
        ),
    )
    redact: list[RedactPath] = Field(default_factory=list)
    accept_flags: list[FlagName] = Field(
        default_factory=list,
        description=(
            "Flags of defaults.hide_flagged that do not hide the tools this rule matches "
            "(for the callers and conditions it matches)."
        ),
    )
    unlock_after: list[ToolName] | None = Field(
        None,
        min_length=1,
        description=(
            "The tools this rule matches are hidden until one of these tools succeeded in the "
            "session (calls are refused with message when set, else answered as unknown)."
        ),
    )
    lock_after: list[ToolName] | None = Field(
        None,
        min_length=1,
        description=(
            "The tools this rule matches are hidden once one of these tools succeeded in the "
            "session (calls are refused with message when set, else answered as unknown)."
        ),
    )
    require_first: ToolName | None = Field(
        None,
        description=(
            "Until this tool succeeded in the session, calls of the other tools this rule "
            "matches are denied (message, else a default telling the model to call it first) "
            "and listings hide them."
        ),
    )

    scopes: list[ScopeName] | None = Field(
        None,
        min_length=1,
        description=(
            "OAuth scopes the caller's token must hold, every one, to call the tools this rule "
            "matches; a caller lacking one is refused (over HTTP a 403 insufficient_scope "
            "challenge naming them, so its client can step up), before the rule's effect. "
            "Listings still show the tools. Static tokens, stdio and in-process callers hold "
            "no scopes. Not with when/unless."
        ),
        json_schema_extra={"uniqueItems": True},
    )

    labels: list[LabelName] | None = Field(
        None,
        min_length=1,
        description=(
            "Source labels: what the tools (resources, prompts) this rule selects read carries "
            "them; a call (read, get) that succeeds adds them to the session (session.labels). "
            "CEL reads a tool's as tool.labels."
        ),
    )
    sink_labels: list[LabelName] | None = Field(
        None,
        min_length=1,
        description=(
            "Sink labels: where the tools this rule selects send data (e.g. egress); CEL reads "
            "them as tool.labels, they are never added to the session."
        ),
    )

    _one_kind = field_validator(*SCOPED_FIELDS)(check_scope)
    _scopes = field_validator("scopes")(check_scopes)
    _label_rule = model_validator(mode="after")(check_label_rule)

    @model_validator(mode="after")
    def _preview_on_ask(self) -> RuleModel:
        if self.preview is not None and self.effect != "ask":
            raise PydanticCustomError(
                "preview", "preview is shown to approvers: it needs effect: ask"
            )
        return self


class PolicyFile(_Strict):
    """A lockgate policy file."""

    model_config = ConfigDict(title="lockgate policy")

    version: Literal[1] = Field(description="Policy format version.")
    defaults: DefaultsModel | None = None
    rules: list[RuleModel] = Field(default_factory=list)
    groups: dict[GroupName, Annotated[list[ToolName], Field(min_length=1)]] = Field(
        default_factory=dict,
        description=(
            "Tool groups: their tools are hidden until the group is loaded in the session "
            "(the gateway's load_NAME tool). Layered files add groups; redefining one with "
            "other tools is an error."
        ),
        json_schema_extra={"additionalProperties": False},
    )
