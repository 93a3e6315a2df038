"""`ScriptToolset`: the script tools of one ``transport: script`` server.

A call runs the script's ``run(**arguments)`` in the sandbox with the host modules of
`gateway.scripts.host`; its return value is the result (a dict as structured content, anything
else as text), and an exception or a hit limit is an error result the model reads.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from gateway.config.scripts import ScriptConfig, ScriptLimits
from gateway.scripts.host import Dispatch, Run, ToolCalls, host_modules_used
from gateway.scripts.refusals import script_failure
from gateway.scripts.runtime import Sandbox, ScriptFailed
from gateway.scripts.slots import CallTree, RunSlots
from gateway.scripts.source import ScriptSource, run_description, run_schema
from policies.decider import SessionSource
from toolsets.abstract import Toolset
from toolsets.context import CallContext
from toolsets.result import ToolResult
from toolsets.tooldef import ToolDef

__all__ = ["ARGS", "ScriptHost", "ScriptToolset", "as_result"]

MAX_DEPTH: Final = 4
"""How deep scripts may call scripts (each level through the whole gateway)."""
ARGS: Final = "__lockgate_args__"
"""The global a run's inputs are bound to."""


def _is_async(source: ScriptSource, function: str) -> bool:
    """Whether ``function`` is an ``async def`` (its call is awaited)."""
    tree = ast.parse(source.text, source.filename)
    return any(isinstance(n, ast.AsyncFunctionDef) and n.name == function for n in tree.body)


def as_result(value: Any) -> ToolResult:
    """A script's return value as a tool result (a wire result dict is taken as it is)."""
    if isinstance(value, dict) and isinstance(value.get("content"), list):
        return ToolResult.from_wire(value)
    if isinstance(value, str):
        return ToolResult.text(value)
    text = json.dumps(value, ensure_ascii=False, default=str)
    if isinstance(value, dict):
        return ToolResult(content=ToolResult.text(text).content, structured_content=value)
    return ToolResult.text(text)


@dataclass(frozen=True)
class _Frame:
    """A run going on: how deep it is and the top-level call's runs it belongs to."""

    depth: int
    tree: CallTree


@dataclass
class ScriptHost:
    """What runs need of the gateway: the sandbox, sessions, and the top of the call chain
    (where sub-calls enter as the script's caller). Runs take a slot (`RunSlots`): a
    sub-call's run joins its caller's tree of runs, a top-level call's run starts one."""

    sandbox: Sandbox
    sessions: SessionSource
    calls: ToolCalls
    slots: RunSlots = field(init=False)
    _frames: dict[str, _Frame] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        self.slots = RunSlots(self.sandbox.config)

    async def run(
        self,
        *,
        name: str,
        source: ScriptSource,
        expression: str,
        inputs: dict[str, Any],
        limits: ScriptLimits,
        ctx: CallContext,
    ) -> Any:
        """Evaluate ``expression`` after ``source``, as the caller in ``ctx``.

        Raises:
            ScriptFailed: it raised, hit a limit or found no slot.
        """
        parent = self._frames.get(ctx.parent_call_id or "")
        if parent is not None and parent.depth >= MAX_DEPTH:
            message = f"{name}: scripts calling scripts nest at most {MAX_DEPTH} deep"
            raise ScriptFailed(message, limit="nesting")
        who = ctx.principal
        tree = parent.tree if parent is not None else self.slots.tree(who.id, who.tenant)
        run = Run(name, ctx, self.calls.call_tool, self.sessions, limits.sub_calls, tree)
        used = host_modules_used(f"{source.text}\n{expression}")
        calls_tools = "tools" in used or "async_tools" in used
        names = tuple(n for n in await self.calls.tools(ctx) if n != name) if calls_tools else ()
        principal = ctx.principal
        key = (source, limits, principal.id, principal.tenant, ctx.session_id, used, names)
        async with self.slots.slot(name, tree, nested=parent is not None):
            self._frames[ctx.call_id] = _Frame((parent.depth if parent else 0) + 1, tree)
            try:
                value = await self.sandbox.call(
                    name=name,
                    text=source.text,
                    filename=source.filename,
                    expression=expression,
                    inputs=inputs,
                    limits=limits,
                    key=key,
                    bind=lambda: Dispatch(ctx, used, names),
                    run=run,
                )
            except ScriptFailed:
                run.check()  # the limit is the cause, whatever the code made of it
                raise
            finally:
                del self._frames[ctx.call_id]
        run.check()
        return value


class ScriptToolset(Toolset):
    """One tool per configured script; a fixed catalogue."""

    def __init__(
        self,
        server: str,
        scripts: Sequence[tuple[ScriptConfig, ScriptSource]],
        host: ScriptHost,
        *,
        prefix: str,
    ) -> None:
        self._server, self._prefix = server, prefix
        self._scripts = {config.name: (config, source) for config, source in scripts}
        self._calls = {
            config.name: f"{'await ' if _is_async(source, 'run') else ''}run(**{ARGS})"
            for config, source in scripts
        }
        self._host = host
        self._tools = {
            config.name: ToolDef(
                name=config.name,
                description=config.description or run_description(source),
                input_schema=config.input_schema or run_schema(source),
                server=server,
            )
            for config, source in scripts
        }

    @property
    def label(self) -> str:
        return self._server

    async def get_tools(self, ctx: CallContext) -> dict[str, ToolDef]:
        return self._tools

    async def call_tool(
        self, name: str, args: Mapping[str, Any], ctx: CallContext, tool: ToolDef
    ) -> ToolResult:
        config, source = self._scripts[tool.upstream_name]
        try:
            value = await self._host.run(
                name=f"{self._prefix}__{tool.upstream_name}",  # as the caller knows it
                source=source,
                expression=self._calls[tool.upstream_name],
                inputs={ARGS: dict(args)},
                limits=config.limits,
                ctx=ctx,
            )
        except ScriptFailed as exc:
            return script_failure(exc, tool)
        return as_result(value)
