"""`PreviewRunner`: runs a held call's preview (a rule's read-only tool, `policies.preview`) for
its approvers, under policy, as the caller, once per held call.

The preview is decided by the policy first, as the next call of the caller's held session (its
labels and gates count, as they would for a call the caller made): anything but ``allow`` is
shown as not run, with what the policy said (a preview is never held nor asked about). A tool
its server does not declare read-only (``readOnlyHint: true``, ``destructiveHint`` not true) is
never run either: the hints are the upstream's claims, so they cannot make a tool safe, but a
tool that does not even claim to be read-only must not run because an approver looked. An
allowed one runs through the whole chain in a session of its own (``preview:{approval id}``),
so it leaves the caller's session, its history and its labels as they were.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Mapping
from typing import Any, Final, Protocol

import anyio

from gateway.approvals.editing import SessionLoader
from gateway.approvals.known_tools import KnownTools
from gateway.approvals.pending import PendingCall
from policies.preview import Preview
from toolsets.context import CallContext, Principal
from toolsets.decision import Decision
from toolsets.errors import ToolNotFoundError
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef

__all__ = ["PREVIEW_CHARS", "Decide", "PreviewRunner", "ToolCall", "declared_read_only"]

PREVIEW_CHARS: Final = 2000
"""Characters of a preview's text shown."""
_TIMEOUT: Final = 10.0
_KEPT: Final = 256
_HINTS: Final = ("readOnlyHint", "destructiveHint")


class ToolCall(Protocol):
    """Calls a tool through the gateway's chain (`gateway.Gateway.call_tool`)."""

    def __call__(
        self, name: str, args: Mapping[str, Any], ctx: CallContext
    ) -> Awaitable[ToolResult]: ...


class Decide(Protocol):
    """The policy's decision for a call in its session, as the chain decides it (the gateway's
    `policies.PolicyDecider`: the session's labels and gates, the server's labels)."""

    def decide(self, tool: ToolDef, args: Mapping[str, Any], ctx: CallContext) -> Decision: ...


def declared_read_only(tool: ToolDef) -> bool:
    """Whether ``tool``'s server declares it read-only: ``readOnlyHint: true`` and
    ``destructiveHint`` not true (a claim of an untrusted upstream, not a proof)."""
    hints = tool.annotations or {}
    return hints.get("readOnlyHint") is True and hints.get("destructiveHint") is not True


class PreviewRunner:
    """Runs previews; each held call's once (the answer is kept for the next look).

    Args:
        call_tool: Calls the preview tool through the gateway's chain.
        tools: Where the preview tool is looked up.
        policy: Decides the preview as a call in the held call's session.
        sessions: Loads that session's state before the policy reads it.
    """

    def __init__(
        self, call_tool: ToolCall, tools: KnownTools, policy: Decide, sessions: SessionLoader
    ) -> None:
        self.call_tool, self.tools, self.policy = call_tool, tools, policy
        self.sessions = sessions
        self._shown: OrderedDict[str, dict[str, Any]] = OrderedDict()

    async def __call__(self, call: PendingCall, preview: Preview) -> dict[str, Any]:
        shown = self._shown.get(call.id)
        if shown is None:
            shown = await self._run(call, preview)
            self._shown[call.id] = shown
            while len(self._shown) > _KEPT:
                self._shown.popitem(last=False)
        return shown

    async def _run(self, call: PendingCall, preview: Preview) -> dict[str, Any]:
        name, args = preview.tool, preview.arguments(call.args)
        tool = await self.tools.current(name)
        if tool is None:
            return _not_run(name, args, f"{name!r} is not served now")
        principal = Principal(
            id=call.principal, roles=frozenset(call.principal_roles), tenant=call.tenant
        )
        held = CallContext(principal=principal, session_id=call.session_id)
        await self.sessions.ensure(held)  # decided as the held session's next call
        decision = self.policy.decide(tool, args, held)
        if decision.effect != "allow":
            return _not_run(name, args, f"the policy says {decision.effect}: {decision.reason}")
        if not declared_read_only(tool):
            return _not_run(name, args, f"{name!r} is not declared read-only{_hints(tool)}")
        ctx = CallContext(principal=principal, session_id=f"preview:{call.id}", max_hold=0)
        try:
            with anyio.fail_after(_TIMEOUT):
                result = await self.call_tool(name, args, ctx)
        except TimeoutError:
            return _not_run(name, args, f"no answer within {_TIMEOUT:g}s")
        except ToolNotFoundError:  # a session gate the held session had opened
            return _not_run(name, args, f"{name!r} is hidden in the preview's own session")
        text = "\n".join(
            str(block.get("text", "")) for block in result.wire.get("content", [])
            if isinstance(block, Mapping) and block.get("type") == "text"
        )  # fmt: skip
        cut = len(text) > PREVIEW_CHARS
        return {
            "tool": name,
            "args": args,
            "ran": True,
            "is_error": result.is_error,
            "text": text[:PREVIEW_CHARS] + ("…" if cut else ""),
        }


def _hints(tool: ToolDef) -> str:
    hints = tool.annotations or {}
    said = [f"{h}: {str(hints[h]).lower()}" for h in _HINTS if h in hints]
    return f" (its server says {', '.join(said)})" if said else " (its server gives no hints)"


def _not_run(name: str, args: Mapping[str, Any], why: str) -> dict[str, Any]:
    return {"tool": name, "args": dict(args), "ran": False, "text": f"Not run: {why}."}
