"""Policy tests as data: a YAML list of calls with the effect and rule each must get."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, GetJsonSchemaHandler, model_validator
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, PydanticCustomError, core_schema

from policies.engine import PolicyEngine
from policies.model import FlagName, GroupName
from policies.session import SessionState
from policies.session_labels import LabelSource
from policies.yamlfile import load_yaml, parse_model
from toolsets.context import Principal
from toolsets.decision import Decision, Effect
from toolsets.errors import ConfigIssue, PolicyError
from toolsets.findings import Direction, Finding, FindingAction
from toolsets.inspected import Verdict, escalated
from toolsets.prefixed import SEPARATOR
from toolsets.tooldef import ToolDef

__all__ = [
    "CallSpec",
    "CaseFile",
    "CaseResult",
    "FindingSpec",
    "PastCall",
    "SessionSpec",
    "evaluate",
    "run_case_file",
    "session_state",
    "tool_for",
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class PastCall(_Strict):
    """An earlier call in the same session (feeds ``session`` in CEL)."""

    tool: str
    args: dict[str, Any] = Field(default_factory=dict)
    ok: bool = Field(True, description="Its result was not an error (counts in succeeded).")
    annotations: dict[str, Any] | None = Field(
        None, description="Its tool's MCP annotations (labels derive from them)."
    )


class SessionSpec(_Strict):
    """A session: earlier calls replayed in order, loaded tool groups, variables; or just the
    list of earlier calls."""

    id: str = "policy-test"
    calls: list[PastCall] = Field(default_factory=list, description="Earlier calls, in order.")
    groups: list[GroupName] = Field(default_factory=list, description="Loaded tool groups.")
    variables: dict[str, Any] = Field(default_factory=dict)
    labels: list[str] = Field(
        default_factory=list,
        description="Data-flow labels the session carries already (besides its calls' ones).",
    )

    @model_validator(mode="before")
    @classmethod
    def _calls_only(cls, value: Any) -> Any:
        return {"calls": value} if isinstance(value, list) else value


class _OrCalls:
    """In the JSON Schema, a session may be its list of earlier calls too."""

    @classmethod
    def __get_pydantic_json_schema__(
        cls, schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        calls = handler(core_schema.list_schema(PastCall.__pydantic_core_schema__))
        return {"anyOf": [calls, handler(schema)]}


def session_state(spec: SessionSpec, engine: PolicyEngine | None = None) -> SessionState:
    """The `SessionState` ``spec`` describes; with ``engine``, its calls that succeeded add
    their tools' source labels as in the gateway."""
    state = SessionState(spec.id)
    for index, past in enumerate(spec.calls, start=1):
        state.record(past.tool, past.args, ok=past.ok)
        if engine is not None and past.ok:
            tool = tool_for(past.tool, None, past.annotations)
            engine.labels.add_to(state, tool, call_id=f"earlier-{index}", at=float(index))
    if spec.labels:
        state.add_labels(spec.labels, LabelSource(call_id="case", tool="case", at=0.0))
    for group in spec.groups:
        state.load_group(group)
    for name, value in spec.variables.items():
        state.set_variable(name, value)
    return state


class FindingSpec(_Strict):
    """A content inspector's finding on the call (`toolsets.findings.Finding`): an ``ask`` or
    ``deny`` one escalates the decision as in the gateway."""

    kind: str
    action: FindingAction
    direction: Direction = "arguments"
    inspector: str = "case"

    def finding(self) -> Finding:
        return Finding(
            kind=self.kind, inspector=self.inspector, direction=self.direction, where="args",
            start=0, end=0, action=self.action,
        )  # fmt: skip


class CallSpec(_Strict):
    """A listing or call of a tool, a resource read or a prompt get to decide."""

    tool: str | None = Field(
        None, description="Exposed tool name; the server is the part before '__'."
    )
    resource: str | None = Field(
        None, description="Resource URI (a listing: URI or template); needs server."
    )
    prompt: str | None = Field(
        None, description="Exposed prompt name; the server is the part before '__'."
    )
    server: str | None = Field(None, description="Server name, when not the name's prefix.")
    annotations: dict[str, Any] | None = None
    args: dict[str, Any] = Field(default_factory=dict)
    principal: str = "anonymous"
    roles: list[str] = Field(default_factory=list)
    claims: dict[str, Any] = Field(default_factory=dict)
    flags: list[FlagName] = Field(
        default_factory=list, description="Warning flags the tool carries (tool.flags)."
    )
    session: Annotated[SessionSpec, _OrCalls] = Field(
        default_factory=SessionSpec,
        description=(
            "The session: {calls, groups, variables}, or just the earlier calls. Listings read "
            "it only when given; calls always (unset: a fresh session)."
        ),
    )
    stage: Literal["call", "list"] = Field(
        "call", description="Decide a call (read, get) or a listing."
    )
    findings: list[FindingSpec] = Field(
        default_factory=list,
        description="Inspector findings on its arguments (ask and deny escalate the decision).",
    )

    @model_validator(mode="after")
    def _one_subject(self) -> CallSpec:
        named = [key for key in ("tool", "resource", "prompt") if getattr(self, key) is not None]
        if len(named) != 1:
            message = f"name exactly one of tool, resource or prompt (got {named or 'none'})"
            raise PydanticCustomError("subject", message)
        if self.resource is not None and self.server is None:
            message = "a resource needs its server (a URI has no server prefix)"
            raise PydanticCustomError("subject", message)
        return self


class Expectation(_Strict):
    """What the decision must be; ``rule: null`` means the default applied."""

    effect: Effect
    rule: str | None = None
    matched: list[str] | None = Field(None, description="Every matching rule, in load order.")


class Case(_Strict):
    """One named case."""

    name: str
    call: CallSpec
    expect: Expectation


class CaseFile(_Strict):
    """A policy case file."""

    model_config = ConfigDict(title="lockgate policy cases")

    policies: list[str] = Field(default_factory=list, description="Relative to this file.")
    cases: list[Case] = Field(min_length=1)


@dataclass(frozen=True, slots=True)
class CaseResult:
    """The outcome of one case; ``failures`` is empty when it passed.

    Attributes:
        case: The case as written.
        where: ``file:line`` of the case.
        decision: What the engine decided.
        failures: One line per unmet expectation.
    """

    case: Case
    where: str
    decision: Decision
    failures: tuple[str, ...]

    @property
    def passed(self) -> bool:
        """Whether the decision met every expectation."""
        return not self.failures


def tool_for(
    name: str, server: str | None = None, annotations: Any = None, flags: Sequence[str] = ()
) -> ToolDef:
    """A `ToolDef` for an exposed name; the server defaults to the prefix before ``__``."""
    prefix, separator, upstream = name.partition(SEPARATOR)
    return ToolDef(
        name=name,
        server=server if server is not None else (prefix if separator else ""),
        upstream_name=upstream if separator else name,
        annotations=annotations,
        flags=tuple(flags),
    )


def evaluate(engine: PolicyEngine, call: CallSpec) -> Decision:
    """Decide ``call`` with ``engine``."""
    principal = Principal(id=call.principal, roles=frozenset(call.roles), claims=call.claims)
    session = session_state(call.session, engine)
    if call.tool is None:
        return _evaluate_resource(engine, call, principal, session)
    tool = tool_for(call.tool, call.server, call.annotations, call.flags)
    if call.stage == "list":
        given = "session" in call.model_fields_set
        return engine.evaluate_visibility(tool, principal, session if given else None)
    decision = engine.evaluate_call(tool, call.args, principal, session)
    if not call.findings:
        return decision
    found = tuple(spec.finding() for spec in call.findings)
    reason = "content inspection found " + ", ".join(sorted({f.kind for f in found}))
    return escalated(decision, Verdict(content=None, masked=None, findings=found, reason=reason))


def _evaluate_resource(
    engine: PolicyEngine, call: CallSpec, principal: Principal, session: SessionState
) -> Decision:
    """A resource or prompt decision (listings read no session)."""
    listing = call.stage == "list"
    state = None if listing else session
    if call.resource is not None:
        return engine.resources.evaluate_resource(
            call.resource, call.server or "", principal, state, listing=listing
        )
    name = call.prompt or ""
    server = tool_for(name, call.server).server
    args = None if listing else call.args
    return engine.resources.evaluate_prompt(name, server, args, principal, state, listing=listing)


def _check(case: Case, where: str, decision: Decision) -> CaseResult:
    expect, failures = case.expect, []
    if decision.effect != expect.effect:
        failures.append(f"effect: expected {expect.effect!r}, got {decision.effect!r}")
    if "rule" in expect.model_fields_set and decision.rule_id != expect.rule:
        failures.append(f"rule: expected {expect.rule!r}, got {decision.rule_id!r}")
    if expect.matched is not None and list(decision.matched) != expect.matched:
        failures.append(f"matched: expected {expect.matched}, got {list(decision.matched)}")
    return CaseResult(case, where, decision, tuple(failures))


def run_case_file(
    path: str | Path, policies: Sequence[str | Path] | None = None
) -> tuple[PolicyEngine, list[CaseResult]]:
    """Run a case file against its policies (or ``policies``, which take precedence).

    Raises:
        ConfigError: When the case file is invalid (`PolicyError` when the policy files are).
    """
    file = str(path)
    try:
        located = load_yaml(Path(path).read_text(encoding="utf-8"), file)
    except OSError as exc:
        raise PolicyError(
            [ConfigIssue(file, None, None, "", f"cannot read: {exc.strerror}")]
        ) from None
    cases = parse_model(located, CaseFile, PolicyError)
    if policies is None:
        if not cases.policies:
            message = "no policy files: list them under 'policies' or pass --policy"
            raise PolicyError([ConfigIssue(str(path), None, None, "policies", message)])
        policies = [Path(path).parent / p for p in cases.policies]
    engine = PolicyEngine.load(policies)
    results = []
    for index, case in enumerate(cases.cases):
        line = located.issue(("cases", index), "").line
        where = f"{file}:{line}" if line is not None else file
        results.append(_check(case, where, evaluate(engine, case.call)))
    return engine, results
