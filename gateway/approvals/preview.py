"""`PreviewRunner`: runs a held call's preview (a rule's read-only tool, `policies.preview`) for
its approvers, under policy, as the caller, once per held call.

The preview is decided by the policy first, as a call of the caller's: anything but ``allow``
is shown as not run, with what the policy said (a preview is never held nor asked about). An
allowed one runs through the whole chain in a session of its own (``preview:{approval id}``),
so it leaves the caller's session, its history and its labels as they were.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Mapping
from typing import Any, Final, Protocol

import anyio

from gateway.approvals.known_tools import KnownTools
from gateway.approvals.pending import PendingCall
from policies.holder import PolicyHolder
from policies.preview import Preview
from toolsets.context import CallContext, Principal
from toolsets.result import ToolResult

__all__ = ["PREVIEW_CHARS", "PreviewRunner", "ToolCall"]

PREVIEW_CHARS: Final = 2000
"""Characters of a preview's text shown."""
_TIMEOUT: Final = 10.0
_KEPT: Final = 256


class ToolCall(Protocol):
    """Calls a tool through the gateway's chain (`gateway.Gateway.call_tool`)."""

    def __call__(
        self, name: str, args: Mapping[str, Any], ctx: CallContext
    ) -> Awaitable[ToolResult]: ...


class PreviewRunner:
    """Runs previews; each held call's once (the answer is kept for the next look)."""

    def __init__(self, call_tool: ToolCall, tools: KnownTools, policy: PolicyHolder) -> None:
        self.call_tool, self.tools, self.policy = call_tool, tools, policy
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
        decision = self.policy.current.evaluate_call(tool, args, principal)
        if decision.effect != "allow":
            return _not_run(name, args, f"the policy says {decision.effect}: {decision.reason}")
        ctx = CallContext(principal=principal, session_id=f"preview:{call.id}", max_hold=0)
        try:
            with anyio.fail_after(_TIMEOUT):
                result = await self.call_tool(name, args, ctx)
        except TimeoutError:
            return _not_run(name, args, f"no answer within {_TIMEOUT:g}s")
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


def _not_run(name: str, args: Mapping[str, Any], why: str) -> dict[str, Any]:
    return {"tool": name, "args": dict(args), "ran": False, "text": f"Not run: {why}."}
