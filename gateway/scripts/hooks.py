"""`ScriptHooks`: the configured ``before_call`` / ``after_call`` hooks, run in the sandbox.

Hooks run in config order for the tools their globs select. ``before_call(tool, args, ctx)``
returns None (go on), ``{"args": {...}}`` (call with these instead: validated and decided by the
policy) or ``{"result": VALUE}`` (answer the call with VALUE; nothing below runs).
``after_call(tool, args, result, ctx)`` sees the result in MCP wire form (``content``,
``structuredContent``, ``isError``) and returns None (keep it) or a replacement. ``tool`` is
``{"name", "server", "upstream_name"}``; ``ctx`` is the host module. A hook that fails or hits a
limit fails the call closed: an error result naming the hook.

Hooks run around a script's sub-calls too (they enter the chain at its top, above the hook
step), but not around the sub-calls a hook makes itself: a hook calling the tools it selects
would otherwise run around its own calls without end.
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any, Final

from gateway.config.scripts import HookConfig
from gateway.scripts.refusals import hook_refusal
from gateway.scripts.runtime import ScriptFailed
from gateway.scripts.source import ScriptSource
from gateway.scripts.toolset import ARGS, ScriptHost, as_result
from toolsets.context import CallContext
from toolsets.hooked import BeforeCall
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef

__all__ = ["ScriptHooks"]

_BEFORE: Final = f"before_call({ARGS}['tool'], {ARGS}['args'], ctx)"
_AFTER: Final = f"after_call({ARGS}['tool'], {ARGS}['args'], {ARGS}['result'], ctx)"


@dataclass(frozen=True)
class _Hook:
    config: HookConfig
    source: ScriptSource
    before: bool
    after: bool

    def selects(self, tool: ToolDef) -> bool:
        return any(fnmatchcase(tool.name, glob) for glob in self.config.tools)


def _defines(source: ScriptSource, function: str) -> bool:
    tree = ast.parse(source.text, source.filename)
    return any(isinstance(n, ast.FunctionDef) and n.name == function for n in tree.body)


class ScriptHooks:
    """Implements the chain's `toolsets.hooked.CallHooks`."""

    def __init__(self, hooks: Sequence[tuple[HookConfig, ScriptSource]], host: ScriptHost) -> None:
        self._hooks = [
            _Hook(config, source, _defines(source, "before_call"), _defines(source, "after_call"))
            for config, source in hooks
        ]
        self._host = host
        self._selected: dict[str, tuple[_Hook, ...]] = {}
        self._running: Counter[str] = Counter()  # call id -> hook runs around it going on

    def selects(self, tool: ToolDef) -> bool:
        return bool(self._for(tool))

    def _for(self, tool: ToolDef) -> tuple[_Hook, ...]:
        found = self._selected.get(tool.name)
        if found is None:
            found = self._selected[tool.name] = tuple(h for h in self._hooks if h.selects(tool))
        return found

    def _made_by_hook(self, ctx: CallContext) -> bool:
        return ctx.parent_call_id is not None and ctx.parent_call_id in self._running

    async def before(self, tool: ToolDef, args: Mapping[str, Any], ctx: CallContext) -> BeforeCall:
        if self._made_by_hook(ctx):
            return BeforeCall()
        changed: Mapping[str, Any] | None = None
        for hook in (h for h in self._for(tool) if h.before):
            inputs = {"tool": _tool(tool), "args": dict(changed or args)}
            try:
                value = await self._run(hook, _BEFORE, inputs, ctx)
            except ScriptFailed as exc:
                message = f"Not executed: hook {exc}"
                return BeforeCall(result=hook_refusal(message, hook.config.name, tool, exc))
            if isinstance(value, dict) and "result" in value:
                return BeforeCall(result=as_result(value["result"]))
            if isinstance(value, dict) and isinstance(value.get("args"), dict):
                changed = value["args"]
            elif value is not None:
                message = f"Not executed: hook {hook.config.name}'s before_call returned {value!r}"
                return BeforeCall(result=hook_refusal(message, hook.config.name, tool))
        return BeforeCall(args=changed)

    async def after(
        self, tool: ToolDef, args: Mapping[str, Any], result: ToolResult, ctx: CallContext
    ) -> ToolResult:
        if self._made_by_hook(ctx):
            return result
        for hook in (h for h in self._for(tool) if h.after):
            inputs = {"tool": _tool(tool), "args": dict(args), "result": dict(result.wire)}
            try:
                value = await self._run(hook, _AFTER, inputs, ctx)
            except ScriptFailed as exc:
                message = f"The result was withheld: hook {exc}"
                return hook_refusal(message, hook.config.name, tool, exc)
            if value is not None:
                result = as_result(value)
        return result

    async def _run(
        self, hook: _Hook, expression: str, inputs: dict[str, Any], ctx: CallContext
    ) -> Any:
        self._running[ctx.call_id] += 1
        try:
            return await self._host.run(
                name=hook.config.name,
                source=hook.source,
                expression=expression,
                inputs={ARGS: inputs},
                limits=hook.config.limits,
                ctx=ctx,
            )
        finally:
            self._running[ctx.call_id] -= 1
            if not self._running[ctx.call_id]:
                del self._running[ctx.call_id]


def _tool(tool: ToolDef) -> dict[str, Any]:
    return {"name": tool.name, "server": tool.server, "upstream_name": tool.upstream_name}
