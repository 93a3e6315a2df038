"""`ResourcePolicy`: decisions on resource reads and prompt gets, and whether listings show them.

Only rules naming ``resources`` or ``prompts`` decide here (see `policies.resource_rules`); when
none matches, ``defaults.resources`` / ``defaults.prompts`` applies (``allow`` unless a file says
otherwise). The rules that match are concluded as for tools (`policies.verdicts`): the most
restrictive effect wins, ``mode: shadow`` rules are recorded, never enforced, and a condition
that cannot be evaluated fails closed to ``deny``. Listings skip rules whose conditions read
``args`` or ``session`` (and shadow rules): ``hide`` removes an entry.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any, Final

from policies.activation import principal_value
from policies.errors import ConditionError
from policies.messages import MessageTemplate, rendered
from policies.resource_rules import KIND_EFFECTS, ResourceKind
from policies.rules import CompiledRule, match_rules
from policies.session import SessionState
from policies.uri_globs import uri_forms
from policies.verdicts import Verdicts
from toolsets.context import Principal
from toolsets.decision import EFFECT_RANK, Decision
from toolsets.tooldef import ToolDef

__all__ = ["ResourcePolicy"]

_LISTING_BLOCKERS: Final = frozenset({"args", "session"})
_CACHE_LIMIT: Final = 8192


class ResourcePolicy:
    """The rules over resources and prompts of one compiled policy.

    Args:
        rules: Every rule of the policy, in load order (tool rules are ignored).
        defaults: The decision per kind when no rule matches.
        verdicts: Concludes the rules that matched (the engine's, so all rules decide alike).
        templates: The messages to render per get or read, by text.
    """

    def __init__(
        self,
        rules: Sequence[CompiledRule],
        defaults: Mapping[ResourceKind, Decision],
        *,
        verdicts: Verdicts,
        templates: Mapping[str, MessageTemplate],
    ) -> None:
        self._rules = {
            kind: tuple(r for r in rules if r.selector is not None and r.selector.kind == kind)
            for kind in KIND_EFFECTS
        }
        self._defaults = defaults
        self._verdicts = verdicts
        self._templates = templates
        self._found: dict[tuple[str, str, str], tuple[CompiledRule, ...]] = {}

    def rules(self, kind: ResourceKind) -> tuple[CompiledRule, ...]:
        """The rules over ``kind``, in load order."""
        return self._rules[kind]

    def evaluate_resource(
        self,
        uri: str,
        server: str,
        principal: Principal,
        session: SessionState | None = None,
        *,
        listing: bool = False,
    ) -> Decision:
        """Decide a read of ``uri`` on ``server`` (``listing``: whether a listing shows it; a
        URI template is decided on its text).

        The URI is decided on every form an upstream may resolve it to (`uri_forms`: its
        normal form first, as sent, fully percent-decoded); the most restrictive decision wins.
        A URI whose decoding is ambiguous is refused.
        """
        forms = uri_forms(uri)
        if forms is None:
            return self._ambiguous(uri)
        decide = functools.partial(
            self._evaluate, args=None, principal=principal, session=session, listing=listing
        )
        decisions = [decide("resources", form, server) for form in forms]
        return max(decisions, key=lambda decision: EFFECT_RANK[decision.effect])

    def _ambiguous(self, uri: str) -> Decision:
        """The refusal of a URI no rule can be sure to see as the upstream will."""
        return Decision(
            effect="deny",
            rule_id=None,
            reason="ambiguous URI: its percent-escapes do not decode to one path",
            message=f"Reading {uri!r} is refused: its percent-escapes are ambiguous.",
            policy_version=self._defaults["resources"].policy_version,
        )

    def evaluate_prompt(
        self,
        name: str,
        server: str,
        args: Mapping[str, Any] | None,
        principal: Principal,
        session: SessionState | None = None,
        *,
        listing: bool = False,
    ) -> Decision:
        """Decide a get of the exposed prompt ``name`` on ``server`` with ``args`` (None and
        ``listing``: whether a listing shows it)."""
        return self._evaluate(
            "prompts",
            name,
            server,
            args=args,
            principal=principal,
            session=session,
            listing=listing,
        )

    def _evaluate(
        self,
        kind: ResourceKind,
        name: str,
        server: str,
        *,
        args: Mapping[str, Any] | None,
        principal: Principal,
        session: SessionState | None,
        listing: bool,
    ) -> Decision:
        rules = self._candidates(kind, name, server)
        if listing:
            rules = tuple(r for r in rules if not (r.shadow or r.variables & _LISTING_BLOCKERS))
        activation = functools.partial(
            _context, kind, name, server, args=args, principal=principal, session=session
        )
        matched, failures = match_rules(rules, principal, activation)
        decision = self._verdicts.conclude(matched, failures, self._defaults[kind])
        if listing:
            return decision
        tool = ToolDef(name=name, server=server)
        return rendered(
            decision, self._templates, tool=tool, args=args, principal=principal, session=session
        )

    def _candidates(self, kind: ResourceKind, name: str, server: str) -> tuple[CompiledRule, ...]:
        """The rules over ``kind`` whose selectors match ``name`` on ``server``."""
        key = (kind, name, server)
        found = self._found.get(key)
        if found is None:
            found = tuple(
                rule
                for rule in self._rules[kind]
                if rule.selector is not None
                and rule.selector.match(name)
                and (rule.match_server is None or rule.match_server(server))
            )
            if len(self._found) >= _CACHE_LIMIT:
                self._found.clear()
            self._found[key] = found
        return found


def _context(
    kind: ResourceKind,
    name: str,
    server: str,
    *,
    args: Mapping[str, Any] | None,
    principal: Principal,
    session: SessionState | None,
) -> Any:
    """The CEL activation of a resource or prompt decision.

    Raises:
        ConditionError: When a value cannot be converted to CEL.
    """
    subject = {"uri": name} if kind == "resources" else {"name": name}
    variables = {
        "resource" if kind == "resources" else "prompt": subject | {"server": server},
        "principal": principal_value(principal),
        "session": (session or SessionState("")).cel_value(),
    }
    if kind == "prompts":
        variables["args"] = dict(args or {})
    import cel  # with the first condition, not at start (see cel_conditions)

    try:
        return cel.Context(variables)
    except Exception as exc:  # unconvertible argument values fail closed too
        raise ConditionError(f"{type(exc).__name__}: {exc}") from None
