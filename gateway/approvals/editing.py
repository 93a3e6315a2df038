"""`EditCheck`: an approver's edited arguments, checked against the tool's input schema and
decided again by the policy, in the call's session, before the edit is applied."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Protocol

from gateway.approvals.errors import DecisionRefused
from gateway.approvals.known_tools import KnownTools
from gateway.approvals.pending import PendingCall
from gateway.approvals.recording import origin_of
from policies import PolicyHolder
from policies.session import SessionState
from toolsets.context import CallContext, Principal
from toolsets.errors import ArgumentsInvalid
from toolsets.validated import SchemaValidators

__all__ = ["EditCheck", "SessionLoader"]


class SessionLoader(Protocol):
    """Loads a session's state (the gateway's `SessionBook`): an edit is re-decided in it."""

    async def ensure(self, ctx: CallContext) -> SessionState: ...


class EditCheck:
    """Checks the arguments of an ``edit`` decision.

    Args:
        tools: Where the call's tool is looked up now.
        validators: The tools' input schema validators.
        policy: Decides the edited call again.
        sessions: The call's session state, for the policy (None: no session state).
    """

    def __init__(
        self,
        tools: KnownTools,
        validators: SchemaValidators,
        policy: PolicyHolder,
        sessions: SessionLoader | None,
    ) -> None:
        self._tools = tools
        self._validators = validators
        self._policy = policy
        self._sessions = sessions

    async def __call__(self, call: PendingCall, args: Mapping[str, Any] | None) -> dict[str, Any]:
        """The edited arguments, as a copy, if they stand.

        Raises:
            DecisionRefused: no arguments, the tool changed or disappeared since the call was
                held, the schema refuses them, or the policy denies or hides the edited call.
        """
        if args is None:
            raise DecisionRefused("an edit needs new arguments")
        tool = await self._tools.current(call.tool)
        if tool is None or tool.pin != call.tool_pin:
            raise DecisionRefused(
                f"tool {call.tool!r} changed or disappeared since the call was held"
            )
        try:
            self._validators.check(tool, args)
        except ArgumentsInvalid as exc:
            raise DecisionRefused(str(exc)) from None
        principal = Principal(
            id=call.principal, roles=frozenset(call.principal_roles), tenant=call.tenant
        )
        session = await self._sessions.ensure(origin_of(call)) if self._sessions else None
        again = self._policy.current.evaluate_call(tool, args, principal, session)
        if again.effect in {"deny", "hide"}:
            raise DecisionRefused(f"the policy refuses the edited arguments: {again.reason}")
        copied: dict[str, Any] = json.loads(json.dumps(dict(args)))
        return copied
