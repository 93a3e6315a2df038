"""What a script tool or a hook that did not finish answers: a refusal when a limit or a hook
stopped the call (`toolsets.refusal`), an error result when the script itself failed."""

from __future__ import annotations

from typing import Final

from gateway.scripts.runtime import ScriptFailed
from toolsets.refusal import Refusal, Unblock, UnblockAction, refusal_result
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef

__all__ = ["hook_refusal", "script_failure"]

_CAPACITY: Final = frozenset({"sandbox", "sandbox.checkout_timeout"})
"""Limits of the whole sandbox (runs at once, free workers): the same call may pass later."""


def script_failure(exc: ScriptFailed, tool: ToolDef | None = None) -> ToolResult:
    """The answer to a script tool's call that ended in ``exc``: over a limit it is refused
    (``sandbox_limit``, the limit's key in ``details``); any other failure is an error result."""
    if exc.limit is None:
        return ToolResult.error(str(exc))
    action: UnblockAction = "retry_later" if exc.limit in _CAPACITY else "change_arguments"
    refusal = Refusal(
        kind="sandbox_limit",
        message=str(exc),
        unblock=Unblock(action=action),
        details={"limit": exc.limit},
    )
    return refusal_result(refusal, tool=tool)


def hook_refusal(
    message: str, hook: str, tool: ToolDef, exc: ScriptFailed | None = None
) -> ToolResult:
    """The answer to a call hook ``hook`` stopped (it refused, failed or hit a limit: hooks fail
    closed): a ``hook`` refusal naming it as the rule."""
    details = {"limit": exc.limit} if exc is not None and exc.limit is not None else {}
    refusal = Refusal(
        kind="hook", message=message, rule=hook, unblock=Unblock(action="none"), details=details
    )
    return refusal_result(refusal, tool=tool)
