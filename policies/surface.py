"""`SurfacePolicy`: decisions on resource reads and prompt gets, and whether listings show them.

Only rules naming ``resources`` or ``prompts`` decide here (see `policies.surface_rules`); when
none matches, ``defaults.resources`` / ``defaults.prompts`` applies (``allow`` unless a file says
otherwise). Every matching rule counts and the most restrictive effect wins, as for tools;
``mode: shadow`` rules are recorded, never enforced; a condition that cannot be evaluated fails
closed to ``deny``. Listings skip rules whose conditions read ``args`` or ``session`` (and
shadow rules): ``hide`` removes an entry.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

import cel

from policies.activation import principal_value
from policies.cel_conditions import Condition, ConditionError
from policies.messages import MessageTemplate, parse_message
from policies.rules import CompiledRule
from policies.session import SessionState
from policies.surface_rules import SURFACE_EFFECTS, SurfaceKind, normalize_uri
from toolsets.context import Principal
from toolsets.decision import EFFECT_RANK, Decision
from toolsets.tooldef import ToolDef

__all__ = ["Conclude", "SurfacePolicy"]

Conclude = Callable[[list[CompiledRule], dict[int, str], Decision], Decision]
"""The engine's step from the rules that matched (and the conditions that failed, by rule
order) to a decision, given the default for when none matched."""

_LISTING_BLOCKERS: Final = frozenset({"args", "session"})
_CACHE_LIMIT: Final = 8192


class SurfacePolicy:
    """The rules over resources and prompts of one compiled policy.

    Args:
        rules: Every rule of the policy, in load order (tool rules are ignored).
        defaults: The decision per kind when no rule matches.
        conclude: Builds the decision (the engine's, so tools and the surface decide alike).
    """

    def __init__(
        self,
        rules: Sequence[CompiledRule],
        defaults: Mapping[SurfaceKind, Decision],
        conclude: Conclude,
    ) -> None:
        self._rules = {
            kind: tuple(r for r in rules if r.surface is not None and r.surface.kind == kind)
            for kind in SURFACE_EFFECTS
        }
        self._defaults = defaults
        self._conclude = conclude
        messages = {r.message for r in rules if r.surface is not None and r.message}
        self._templates: dict[str, MessageTemplate] = {
            text: parse_message(text) for text in messages if "{" in text or "}" in text
        }
        self._found: dict[tuple[str, str, str], tuple[CompiledRule, ...]] = {}

    def rules(self, kind: SurfaceKind) -> tuple[CompiledRule, ...]:
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

        A URI not in normal form is decided on its normal form (`normalize_uri`) and as sent;
        the more restrictive decision wins.
        """
        decide = functools.partial(
            self._evaluate, args=None, principal=principal, session=session, listing=listing
        )
        normal = normalize_uri(uri)
        decision = decide("resources", normal, server)
        if normal != uri:
            raw = decide("resources", uri, server)
            if EFFECT_RANK[raw.effect] > EFFECT_RANK[decision.effect]:
                decision = raw
        return decision

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
        kind: SurfaceKind,
        name: str,
        server: str,
        *,
        args: Mapping[str, Any] | None,
        principal: Principal,
        session: SessionState | None,
        listing: bool,
    ) -> Decision:
        matched: list[CompiledRule] = []
        failures: dict[int, str] = {}
        context: Any = None
        memo: dict[Condition, bool] = {}
        for rule in self._candidates(kind, name, server):
            if listing and (rule.shadow or rule.variables & _LISTING_BLOCKERS):
                continue
            if rule.match_principal is not None and not rule.match_principal(principal):
                continue
            if rule.conditional:
                try:
                    if context is None:
                        context = _context(
                            kind, name, server, args=args, principal=principal, session=session
                        )
                    if not rule.holds(context, memo):
                        continue
                except ConditionError as exc:
                    failures[rule.order] = str(exc)
            matched.append(rule)
        decision = self._conclude(matched, failures, self._defaults[kind])
        template = self._templates.get(decision.message or "")
        if listing or template is None:
            return decision
        message = template.render(
            tool=ToolDef(name=name, server=server),
            args=args,
            principal=principal,
            session=session,
            redact=decision.redact,
        )
        return dataclasses.replace(decision, message=message)

    def _candidates(self, kind: SurfaceKind, name: str, server: str) -> tuple[CompiledRule, ...]:
        """The rules over ``kind`` whose selectors match ``name`` on ``server``."""
        key = (kind, name, server)
        found = self._found.get(key)
        if found is None:
            found = tuple(
                rule
                for rule in self._rules[kind]
                if rule.surface is not None
                and rule.surface.match(name)
                and (rule.match_server is None or rule.match_server(server))
            )
            if len(self._found) >= _CACHE_LIMIT:
                self._found.clear()
            self._found[key] = found
        return found


def _context(
    kind: SurfaceKind,
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
    try:
        return cel.Context(variables)
    except Exception as exc:  # unconvertible argument values fail closed too
        raise ConditionError(f"{type(exc).__name__}: {exc}") from None
